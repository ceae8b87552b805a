; A namespace is a naming scope (``Acme.Shapes.Square``), not a symbol; a file-scoped one
; (``namespace Acme.Shapes;``) names the whole file's (``@package``).
(namespace_declaration name: [(identifier) (qualified_name)] @name) @definition.impl
(file_scoped_namespace_declaration name: [(identifier) (qualified_name)] @package)

(class_declaration name: (identifier) @name) @definition.class
(struct_declaration name: (identifier) @name) @definition.class
(record_declaration name: (identifier) @name) @definition.class
(enum_declaration name: (identifier) @name) @definition.class
(interface_declaration name: (identifier) @name) @definition.interface
(method_declaration name: (identifier) @name) @definition.function
(constructor_declaration name: (identifier) @name) @definition.function
(local_function_statement name: (identifier) @name) @definition.function
; Fields and properties: what ``_reader.Read()`` and ``Reader.Read()`` are called on.
(declaration_list (field_declaration (variable_declaration
  (variable_declarator name: (identifier) @name))) @definition.variable)
(declaration_list (property_declaration name: (identifier) @name) @definition.variable)

; ``class Square : Shape, IComparable<Square>``: C# does not say which is the class.
(class_declaration name: (identifier) @type
  (base_list [(identifier) (qualified_name) (generic_name)] @name)) @reference.inherit
(struct_declaration name: (identifier) @type
  (base_list [(identifier) (qualified_name) (generic_name)] @name)) @reference.inherit
(record_declaration name: (identifier) @type
  (base_list [(identifier) (qualified_name) (generic_name)] @name)) @reference.inherit
(interface_declaration name: (identifier) @type
  (base_list [(identifier) (qualified_name) (generic_name)] @name)) @reference.inherit

; Calls: a name (``Run()``, ``Make<T>()``), a member (``x.Run()``, ``this.Run()``,
; ``base.Run()``, ``x?.Run()``, ``x.Make<T>()``).
(invocation_expression function: (identifier) @name) @reference.call
(invocation_expression function: (generic_name (identifier) @name)) @reference.call
(invocation_expression function: (member_access_expression expression: (_) @receiver
  name: [(identifier) @name (generic_name (identifier) @name)])) @reference.call
(invocation_expression function: (member_access_expression ["this" "base"] @receiver
  name: [(identifier) @name (generic_name (identifier) @name)])) @reference.call
(invocation_expression function: (conditional_access_expression condition: (_) @receiver
  (member_binding_expression name: [(identifier) @name (generic_name (identifier) @name)])))
  @reference.call
(object_creation_expression type: [(identifier) (qualified_name) (generic_name)] @name)
  @reference.instantiate
; ``: base(..)`` and ``: this(..)`` run the base's or this class's constructor.
(constructor_initializer ["base" "this"] @name) @reference.instantiate

(using_directive) @reference.import
