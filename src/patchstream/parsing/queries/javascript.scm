(class_declaration name: (identifier) @name) @definition.class
(function_declaration name: (identifier) @name) @definition.function
(generator_function_declaration name: (identifier) @name) @definition.function
(method_definition name: [(property_identifier) (private_property_identifier)] @name) @definition.function
(variable_declarator
  name: (identifier) @name
  value: [(arrow_function) (function_expression)]) @definition.function

(program (lexical_declaration (variable_declarator name: (identifier) @name) @definition.variable))
(program (variable_declaration (variable_declarator name: (identifier) @name) @definition.variable))
(program (export_statement
  declaration: (lexical_declaration (variable_declarator name: (identifier) @name) @definition.variable)))
(class_body (field_definition property: (property_identifier) @name) @definition.variable)

(class_declaration
  name: (identifier) @type
  (class_heritage [(identifier) (member_expression)] @name)) @reference.inherit

(call_expression function: [(identifier) (member_expression)] @name) @reference.call
(new_expression constructor: [(identifier) (member_expression)] @name) @reference.instantiate

(import_statement) @reference.import
; CommonJS: ``const x = require("./x")`` (``var`` too; destructured or not) imports.
(lexical_declaration (variable_declarator
  value: (call_expression function: (identifier) @require arguments: (arguments . (string))))
  (#eq? @require "require")) @reference.import
(variable_declaration (variable_declarator
  value: (call_expression function: (identifier) @require arguments: (arguments . (string))))
  (#eq? @require "require")) @reference.import
