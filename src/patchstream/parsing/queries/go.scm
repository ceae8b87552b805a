(function_declaration name: (identifier) @name) @definition.function
(method_declaration
  receiver: (parameter_list (parameter_declaration
    type: [(type_identifier) @receiver
           (pointer_type (type_identifier) @receiver)
           (generic_type type: (type_identifier) @receiver)
           (pointer_type (generic_type type: (type_identifier) @receiver))]))
  name: (field_identifier) @name) @definition.function
(type_spec name: (type_identifier) @name type: (interface_type)) @definition.interface
(type_spec name: (type_identifier) @name) @definition.class
(interface_type (method_elem name: (field_identifier) @name) @definition.function)

(source_file (var_declaration (var_spec name: (identifier) @name) @definition.variable))
(source_file (const_declaration (const_spec name: (identifier) @name) @definition.variable))

; Embedding is Go's inheritance.
(type_spec
  name: (type_identifier) @type
  type: (struct_type (field_declaration_list
    (field_declaration
      !name
      type: [(type_identifier) (qualified_type) (pointer_type (type_identifier)) (pointer_type (qualified_type))] @name)))) @reference.inherit
(type_spec
  name: (type_identifier) @type
  type: (interface_type (type_elem [(type_identifier) (qualified_type)] @name))) @reference.inherit

(call_expression function: [(identifier) (selector_expression)] @name) @reference.call
(composite_literal type: [(type_identifier) (qualified_type)] @name) @reference.instantiate

(import_declaration) @reference.import
(package_clause (package_identifier) @package)
