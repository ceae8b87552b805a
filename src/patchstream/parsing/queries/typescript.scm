(class_declaration name: (type_identifier) @name) @definition.class
(abstract_class_declaration name: (type_identifier) @name) @definition.class
(enum_declaration name: (identifier) @name) @definition.class
(interface_declaration name: (type_identifier) @name) @definition.interface
(function_declaration name: (identifier) @name) @definition.function
(generator_function_declaration name: (identifier) @name) @definition.function
(method_definition name: [(property_identifier) (private_property_identifier)] @name) @definition.function
(abstract_method_signature name: (property_identifier) @name) @definition.function
(interface_body (method_signature name: (property_identifier) @name) @definition.function)
(variable_declarator
  name: (identifier) @name
  value: [(arrow_function) (function_expression)]) @definition.function

(program (lexical_declaration (variable_declarator name: (identifier) @name) @definition.variable))
(program (variable_declaration (variable_declarator name: (identifier) @name) @definition.variable))
(program (export_statement
  declaration: (lexical_declaration (variable_declarator name: (identifier) @name) @definition.variable)))
(class_body (public_field_definition name: (property_identifier) @name) @definition.variable)

([(class_declaration name: (type_identifier) @type (class_heritage (extends_clause value: [(identifier) (member_expression)] @name)))
  (abstract_class_declaration name: (type_identifier) @type (class_heritage (extends_clause value: [(identifier) (member_expression)] @name)))]) @reference.inherit
([(class_declaration name: (type_identifier) @type (class_heritage (implements_clause [(type_identifier) (generic_type)] @name)))
  (abstract_class_declaration name: (type_identifier) @type (class_heritage (implements_clause [(type_identifier) (generic_type)] @name)))]) @reference.inherit
(interface_declaration
  name: (type_identifier) @type
  (extends_type_clause type: [(type_identifier) (generic_type)] @name)) @reference.inherit

(call_expression function: [(identifier) (member_expression)] @name) @reference.call
(new_expression constructor: [(identifier) (member_expression)] @name) @reference.instantiate

(import_statement) @reference.import
