; Definitions: @definition.<kind> is the declaration, @name its name.
(class_definition name: (identifier) @name) @definition.class
(function_definition name: (identifier) @name) @definition.function

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
; through a subscript, and a loop over a literal or a name.
(assignment left: (identifier) @flow.name right: [(dictionary) (list) (tuple)] @flow.table
  ) @flow.bind
(call function: (subscript value: (identifier) @flow.held) @flow.through) @flow.subscript_call
(for_statement left: (identifier) @flow.name right: [(list) (tuple) (identifier)] @flow.iter
  body: (block) @flow.body) @flow.loop
