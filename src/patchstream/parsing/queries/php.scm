; Classes, interfaces, traits and enums; functions, methods, properties and constants.
(class_declaration name: (name) @name) @definition.class
(trait_declaration name: (name) @name) @definition.class
(enum_declaration name: (name) @name) @definition.class
(interface_declaration name: (name) @name) @definition.interface
(method_declaration name: (name) @name) @definition.function
(function_definition name: (name) @name) @definition.function
(declaration_list (property_declaration (property_element (variable_name) @name)) @definition.variable)
(declaration_list (const_declaration (const_element (name) @name)) @definition.variable)

; ``extends``, ``implements``, an interface's ``extends``, and a trait a class uses (its
; methods become the class's).
(class_declaration name: (name) @type
  (base_clause [(name) (qualified_name)] @name)) @reference.inherit
(class_declaration name: (name) @type
  (class_interface_clause [(name) (qualified_name)] @name)) @reference.inherit
(enum_declaration name: (name) @type
  (class_interface_clause [(name) (qualified_name)] @name)) @reference.inherit
(interface_declaration name: (name) @type
  (base_clause [(name) (qualified_name)] @name)) @reference.inherit
(class_declaration name: (name) @type
  body: (declaration_list (use_declaration [(name) (qualified_name)] @name))) @reference.inherit
(trait_declaration name: (name) @type
  body: (declaration_list (use_declaration [(name) (qualified_name)] @name))) @reference.inherit

; Calls: a function (``f()``, ``\ns\f()``), a method (``$x->m()``, ``$this->m()``,
; ``$x?->m()``), a static or scoped one (``Foo::m()``, ``self::m()``, ``parent::m()``);
; ``new Foo(..)`` builds one.
(function_call_expression function: [(name) (qualified_name)] @name) @reference.call
(member_call_expression object: (_) @receiver name: (name) @name) @reference.call
(nullsafe_member_call_expression object: (_) @receiver name: (name) @name) @reference.call
(scoped_call_expression scope: [(name) (qualified_name) (relative_scope)] @receiver
  name: (name) @name) @reference.call
(object_creation_expression [(name) (qualified_name)] @name) @reference.instantiate

(namespace_use_declaration) @reference.import
(namespace_definition name: (namespace_name) @package)
