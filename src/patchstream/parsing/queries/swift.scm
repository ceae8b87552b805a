; Classes, structs, enums and actors (one node type: class_declaration), protocols,
; functions, initializers and a type's stored properties. An extension is a naming scope, as
; a Rust ``impl`` is: its methods are the extended type's (``Square.grow``).
(class_declaration name: (type_identifier) @name) @definition.class
(class_declaration name: (user_type) @name) @definition.impl
(protocol_declaration name: (type_identifier) @name) @definition.interface
(function_declaration name: (simple_identifier) @name) @definition.function
(protocol_function_declaration name: (simple_identifier) @name) @definition.function
(init_declaration "init" @name) @definition.function
(class_body (property_declaration name: (pattern (simple_identifier) @name)) @definition.variable)

; A type's superclass and protocols; a protocol's own.
(class_declaration name: (type_identifier) @type
  (inheritance_specifier inherits_from: (user_type) @name)) @reference.inherit
(protocol_declaration name: (type_identifier) @type
  (inheritance_specifier inherits_from: (user_type) @name)) @reference.inherit

; Calls: ``f()``, ``Square(side: 1)`` (an initializer: builds one), ``x.m()``,
; ``self.m()``, ``super.init()``, ``Type.m()``; trailing closures too.
(call_expression . (simple_identifier) @name) @reference.call
(call_expression . (navigation_expression target: (_) @receiver
  suffix: (navigation_suffix suffix: (simple_identifier) @name))) @reference.call

(import_declaration) @reference.import

; ``a + g()``, ``x ?? T.make()``: the grammar reads the call as applied to the whole binary
; expression (``(a + g)()``); the callee written is its right operand.
(call_expression . (_ rhs: (simple_identifier) @name)) @reference.call
(call_expression . (_ rhs: (navigation_expression target: (_) @receiver
  suffix: (navigation_suffix suffix: (simple_identifier) @name)))) @reference.call
