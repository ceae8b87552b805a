; Classes, objects (a companion object shares its class's name: ``Square.unit`` is the
; object's), traits, methods (abstract ones too) and a template's vals and vars.
(class_definition name: (identifier) @name) @definition.class
(object_definition name: (identifier) @name) @definition.class
(trait_definition name: (identifier) @name) @definition.interface
(function_definition name: (identifier) @name) @definition.function
(function_declaration name: (identifier) @name) @definition.function
(template_body (val_definition pattern: (identifier) @name) @definition.variable)
(template_body (var_definition pattern: (identifier) @name) @definition.variable)
(template_body (val_declaration name: (identifier) @name) @definition.variable)

; ``extends Base(1) with T``: every parent gives members; a class's arguments build it.
(class_definition name: (identifier) @type
  extend: (extends_clause type: [(type_identifier) (generic_type) (stable_type_identifier)] @name))
  @reference.inherit
(object_definition name: (identifier) @type
  extend: (extends_clause type: [(type_identifier) (generic_type) (stable_type_identifier)] @name))
  @reference.inherit
(trait_definition name: (identifier) @type
  extend: (extends_clause type: [(type_identifier) (generic_type) (stable_type_identifier)] @name))
  @reference.inherit
; A class's parents are built with it (its base's constructor, each trait's initializer).
(class_definition extend: (extends_clause type: [(type_identifier) (generic_type)
  (stable_type_identifier)] @name) @reference.instantiate)
(object_definition extend: (extends_clause type: [(type_identifier) (generic_type)
  (stable_type_identifier)] @name) @reference.instantiate)

; Calls: a name (``n()``, ``Square(2.0)``: an apply), a member (``a.area()``, ``this.n()``,
; ``super.o()``, ``Q.make()``); ``new Q(..)`` builds one.
(call_expression function: (identifier) @name) @reference.call
(call_expression function: (field_expression value: (_) @receiver field: (identifier) @name))
  @reference.call
(instance_expression . [(type_identifier) (generic_type) (stable_type_identifier)] @name)
  @reference.instantiate

(import_declaration) @reference.import
(package_clause name: (package_identifier) @package)
