; Classes, objects (a companion object shares its class's name: ``Square.unit`` is the
; object's), traits, methods (abstract ones too) and a template's vals and vars.
(class_definition name: (identifier) @name) @definition.class
(object_definition name: (identifier) @name) @definition.class
(trait_definition name: (identifier) @name) @definition.interface
(function_definition name: [(identifier) (operator_identifier)] @name) @definition.function
(function_declaration name: [(identifier) (operator_identifier)] @name) @definition.function
(template_body (val_definition pattern: (identifier) @name) @definition.variable)
(template_body (var_definition pattern: (identifier) @name) @definition.variable)
(template_body (val_declaration name: (identifier) @name) @definition.variable)

; ``extends Base(1) with T``: every parent gives members; a class's arguments build it. No
; ``type:`` field in these patterns: with it a query matches only the first of the parents.
(class_definition name: (identifier) @type
  extend: (extends_clause [(type_identifier) @name (stable_type_identifier) @name (generic_type type: (_) @name)]))
  @reference.inherit
(object_definition name: (identifier) @type
  extend: (extends_clause [(type_identifier) @name (stable_type_identifier) @name (generic_type type: (_) @name)]))
  @reference.inherit
(trait_definition name: (identifier) @type
  extend: (extends_clause [(type_identifier) @name (stable_type_identifier) @name (generic_type type: (_) @name)]))
  @reference.inherit
; A class's parents are built with it (its base's constructor, each trait's initializer).
(class_definition extend: (extends_clause [(type_identifier) @name
  (stable_type_identifier) @name (generic_type type: (_) @name)]) @reference.instantiate)
(object_definition extend: (extends_clause [(type_identifier) @name
  (stable_type_identifier) @name (generic_type type: (_) @name)]) @reference.instantiate)

; Calls: a name (``n()``, ``f[T](x)``, ``Square(2.0)``: an apply), a member (``a.area()``, ``this.n()``,
; ``super.o()``, ``Q.make()``); ``new Q(..)`` builds one.
(call_expression function: (identifier) @name) @reference.call
(call_expression function: (field_expression value: (_) @receiver field: (identifier) @name))
  @reference.call
(call_expression function: (generic_function function: (identifier) @name)) @reference.call
(call_expression function: (generic_function
  function: (field_expression value: (_) @receiver field: (identifier) @name))) @reference.call
(instance_expression . [(type_identifier) @name (stable_type_identifier) @name (generic_type type: (_) @name)])
  @reference.instantiate
; ``new JButton with SuperMixin``: the class is built and each trait's initializer runs.
(instance_expression . (compound_type [(type_identifier) @name (stable_type_identifier) @name
  (generic_type type: (_) @name)])) @reference.instantiate

(import_declaration) @reference.import
(package_clause name: (package_identifier) @package)
