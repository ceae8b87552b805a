; Definitions: @definition.<kind> is the declaration, @name its name.
(class_definition name: (identifier) @name) @definition.class
(function_definition name: (identifier) @name) @definition.function
; A lambda bound to a name is that name's function (``key = lambda item: item.rank``): its
; calls are its own, and a call of the name reaches it.
(assignment left: (identifier) @name right: (lambda) @definition.function)

(module (expression_statement (assignment left: (identifier) @name) @definition.variable))
(class_definition
  body: (block (expression_statement (assignment left: (identifier) @name) @definition.variable)))

; Inheritance: @type names the deriving class, @name the base.
(class_definition
  name: (identifier) @type
  superclasses: (argument_list [(identifier) (attribute)] @name)) @reference.inherit

; Calls (a call of a class is an instantiation; decided when the target is known).
(call function: [(identifier) (attribute)] @name) @reference.call

(import_statement) @reference.import
(import_from_statement) @reference.import

; Values called later (parsing/value_flow.py): a literal of callables bound to a name, a call
; through a subscript, a loop over a literal or a name, and a decorator applied.
(decorated_definition (decorator [(identifier) (attribute) (call)] @flow.decorator)
  definition: (_) @flow.decorated) @flow.decoration
(assignment left: (identifier) @flow.name right: [(dictionary) (list) (tuple)] @flow.table
  ) @flow.bind
(call function: (subscript value: (identifier) @flow.held) @flow.through) @flow.subscript_call
(assignment left: (subscript value: (identifier) @flow.held subscript: (_) @flow.key)
  right: [(identifier) (attribute)] @flow.stored) @flow.store
(for_statement left: (identifier) @flow.name right: [(list) (tuple) (identifier)] @flow.iter
  body: (block) @flow.body) @flow.loop
; Held values (parsing/value_holders.py): what functions return or yield, unpacking, a name
; bound to a call's result, attributes of self, a call of a call, a loop over a call.
(return_statement [(identifier) (attribute)] @flow.returned) @flow.return
(yield [(identifier) (attribute)] @flow.yielded) @flow.yield
(assignment left: [(pattern_list) (tuple_pattern) (list_pattern)] @flow.targets
  right: [(expression_list) (tuple) (list) (parenthesized_expression)] @flow.sources) @flow.unpack
(assignment right: (assignment)) @flow.chain
(assignment left: (identifier) @flow.name right: (call) @flow.made) @flow.made_bind
(assignment left: (attribute object: (identifier) @flow.owner attribute: (identifier) @flow.attr)
  right: [(identifier) (attribute)] @flow.value) @flow.attr_bind
(call function: (call) @flow.inner) @flow.call_of_call
(for_statement right: [(identifier) (attribute) (call)] @flow.iterable) @flow.iteration
(for_in_clause right: [(identifier) (attribute) (call)] @flow.iterable) @flow.iteration
(for_statement left: (identifier) @flow.name right: (call) @flow.iter_call
  body: (block) @flow.body) @flow.loop_call
