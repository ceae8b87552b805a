(class_declaration name: (identifier) @name) @definition.class
(enum_declaration name: (identifier) @name) @definition.class
(record_declaration name: (identifier) @name) @definition.class
(interface_declaration name: (identifier) @name) @definition.interface
(method_declaration name: (identifier) @name) @definition.function
(constructor_declaration name: (identifier) @name) @definition.function
(class_body (field_declaration declarator: (variable_declarator name: (identifier) @name)) @definition.variable)

(class_declaration
  name: (identifier) @type
  superclass: (superclass [(type_identifier) (scoped_type_identifier) (generic_type)] @name)) @reference.inherit
(class_declaration
  name: (identifier) @type
  interfaces: (super_interfaces (type_list [(type_identifier) (scoped_type_identifier) (generic_type)] @name))) @reference.inherit
(interface_declaration
  name: (identifier) @type
  (extends_interfaces (type_list [(type_identifier) (scoped_type_identifier) (generic_type)] @name))) @reference.inherit

(method_invocation object: (_) @receiver name: (identifier) @name) @reference.call
(method_invocation !object name: (identifier) @name) @reference.call
(object_creation_expression type: [(type_identifier) (scoped_type_identifier) (generic_type)] @name) @reference.instantiate
(explicit_constructor_invocation constructor: [(this) (super)] @name) @reference.instantiate
(enum_declaration name: (identifier) @name
  body: (enum_body (enum_constant arguments: (argument_list)) @reference.instantiate))

(import_declaration) @reference.import
(package_declaration [(scoped_identifier) (identifier)] @package)
