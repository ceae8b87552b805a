; Classes, interfaces, objects (a companion object is no scope: ``Square.unit()`` names its
; functions through the class), functions (top-level, members, extensions), properties.
(class_declaration name: (identifier) @name) @definition.class
(class_declaration "interface" name: (identifier) @name) @definition.interface
(object_declaration name: (identifier) @name) @definition.class
(function_declaration name: (identifier) @name) @definition.function
; An extension function is its receiver type's (``fun Shape.twice()`` is ``Shape.twice``):
; a bare call in it is the receiver's member first.
(function_declaration (user_type) @receiver . "." . name: (identifier) @name) @definition.function
(class_body (property_declaration (variable_declaration (identifier) @name)) @definition.variable)
(source_file (property_declaration (variable_declaration (identifier) @name)) @definition.variable)
(class_parameter ["val" "var"] (identifier) @name) @definition.variable

; ``class Q : Base(1), Shape``: a base class is constructed (``Base(1)``), an interface is not.
(class_declaration name: (identifier) @type
  (delegation_specifiers (delegation_specifier (user_type) @name))) @reference.inherit
(class_declaration name: (identifier) @type
  (delegation_specifiers (delegation_specifier (constructor_invocation (user_type) @name))))
  @reference.inherit
(object_declaration name: (identifier) @type
  (delegation_specifiers (delegation_specifier (user_type) @name))) @reference.inherit
(object_declaration name: (identifier) @type
  (delegation_specifiers (delegation_specifier (constructor_invocation (user_type) @name))))
  @reference.inherit
(delegation_specifier (constructor_invocation (user_type) @name)) @reference.instantiate
(constructor_delegation_call ["this" "super"] @name) @reference.instantiate

; Calls: a name (``run()``, ``Square(2.0)``: a class's name builds one), a member
; (``s.area()``, ``s?.area()``, ``this.area()``, ``super.area()``).
(call_expression . (identifier) @name) @reference.call
(call_expression . (navigation_expression . (_) @receiver (identifier) @name .)) @reference.call
; The grammar reads ``!isEmpty()`` as ``(!isEmpty)()`` (and ``!x.isEmpty()``'s receiver as
; ``!x``, which extraction strips): the call is the name's.
(call_expression . (unary_expression . (identifier) @name .)) @reference.call
; A function reference runs the function where it is passed (``forEach(this::addModifier)``,
; ``map(::parse)``, ``map(TypeName::emit)``): the compiler calls it there.
(callable_reference . "::" . (identifier) @name .) @reference.call
(navigation_expression . [(this_expression) (identifier)] @receiver . "::" . (identifier) @name .)
  @reference.call

(import) @reference.import
(package_header (qualified_identifier) @package)
