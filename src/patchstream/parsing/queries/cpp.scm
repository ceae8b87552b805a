; Functions and methods, through up to two pointer or reference declarators. In a class body a
; method's name is a field_identifier; out of it, ``Foo::Bar`` names the class (@receiver).
(function_definition declarator: (function_declarator declarator: [(identifier) (field_identifier)] @name)) @definition.function
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: [(identifier) (field_identifier)] @name))) @definition.function
(function_definition declarator: (reference_declarator (function_declarator declarator: [(identifier) (field_identifier)] @name))) @definition.function
(function_definition declarator: (pointer_declarator declarator: (pointer_declarator declarator: (function_declarator declarator: [(identifier) (field_identifier)] @name)))) @definition.function
(function_definition declarator: (function_declarator declarator: (qualified_identifier scope: (namespace_identifier) @receiver name: [(identifier) (destructor_name)] @name))) @definition.function
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (qualified_identifier scope: (namespace_identifier) @receiver name: (identifier) @name)))) @definition.function
(function_definition declarator: (reference_declarator (function_declarator declarator: (qualified_identifier scope: (namespace_identifier) @receiver name: (identifier) @name)))) @definition.function
(function_definition declarator: (function_declarator declarator: (destructor_name) @name)) @definition.function
; A function-like macro is called like a function.
(preproc_function_def name: (identifier) @name) @definition.function

; A named namespace is a naming scope (``leveldb.DBImpl``), not a symbol.
(namespace_definition name: [(namespace_identifier) (nested_namespace_specifier)] @name body: (declaration_list)) @definition.impl

(class_specifier name: (type_identifier) @name body: (field_declaration_list)) @definition.class
(struct_specifier name: (type_identifier) @name body: (field_declaration_list)) @definition.class
; A nested class defined out of its class (``struct TableBuilder::Rep { .. };``): the outer
; class names it, as ``Foo::Run``'s names a method.
(class_specifier name: (qualified_identifier scope: (namespace_identifier) @receiver
  name: (type_identifier) @name) body: (field_declaration_list)) @definition.class
(struct_specifier name: (qualified_identifier scope: (namespace_identifier) @receiver
  name: (type_identifier) @name) body: (field_declaration_list)) @definition.class
(union_specifier name: (type_identifier) @name body: (field_declaration_list)) @definition.class
(enum_specifier name: (type_identifier) @name body: (enumerator_list)) @definition.class
(type_definition type: [(struct_specifier !name body: (field_declaration_list))
                        (union_specifier !name body: (field_declaration_list))
                        (enum_specifier !name body: (enumerator_list))]
                 declarator: (type_identifier) @name) @definition.class

; A type alias of a class (``using shared_node_ref = std::shared_ptr<node_ref>;``, ``typedef
; Foo Bar;``): a class of its own name that inherits the type it names (an owning pointer: the
; type it holds), so a call on a field declared with the alias finds the class's methods.
(alias_declaration name: (type_identifier) @name
  type: (type_descriptor type: [(type_identifier) (qualified_identifier) (template_type)])) @definition.class
(type_definition type: [(type_identifier) (qualified_identifier) (template_type)]
  declarator: (type_identifier) @name) @definition.class

; Fields: what ``versions_->current()`` in another file's method is called on.
(field_declaration_list (field_declaration declarator: [(field_identifier) @name
  (pointer_declarator declarator: (field_identifier) @name)
  (reference_declarator (field_identifier) @name)]) @definition.variable)

(class_specifier
  name: (type_identifier) @type
  (base_class_clause [(type_identifier) (qualified_identifier) (template_type)] @name)) @reference.inherit
(struct_specifier
  name: (type_identifier) @type
  (base_class_clause [(type_identifier) (qualified_identifier) (template_type)] @name)) @reference.inherit

(alias_declaration name: (type_identifier) @type
  type: (type_descriptor type: [(type_identifier) (qualified_identifier) (template_type)] @name)) @reference.inherit
(type_definition type: [(type_identifier) (qualified_identifier) (template_type)] @name
  declarator: (type_identifier) @type) @reference.inherit

; Calls: a name, a qualified name (``Env::Default()``, ``std::max``), a member
; (``obj.m()``, ``p->m()``, ``this->m()``) and a template's (``f<T>()``).
(call_expression function: [(identifier) (qualified_identifier)] @name) @reference.call
(call_expression function: (template_function name: (identifier) @name)) @reference.call
(call_expression function: (field_expression argument: (_) @receiver field: (field_identifier) @name)) @reference.call
(call_expression function: (field_expression argument: (_) @receiver
  field: (template_method name: (field_identifier) @name))) @reference.call
(new_expression type: [(type_identifier) (qualified_identifier)] @name) @reference.instantiate
; ``throw DeepRecursion{depth, mark, msg};``, ``Mark{}``: a temporary built with braces.
(compound_literal_expression type: [(type_identifier) (qualified_identifier) (template_type)] @name)
  @reference.instantiate
; A base class's constructor, called from a constructor's initializer list (``: EnvWrapper(e)``;
; a member's initializer names a field, in lower case by convention).
(field_initializer (field_identifier) @name (#match? @name "^[A-Z]") (argument_list)) @reference.instantiate
; A local built by its declaration runs its class's constructor: ``WriteBatch batch;``,
; ``Slice key(data, n);``, ``Options o{...};``, ``DepthGuard<500> guard(depth);`` (a pointer or
; a reference builds nothing).
(declaration type: [(type_identifier) (qualified_identifier) (template_type)] @name
  declarator: [(identifier)
               (init_declarator declarator: (identifier) value: [(argument_list) (initializer_list)])]
  ) @reference.instantiate
; ``Repairer repairer(dbname, options);`` in a body: the grammar reads a function declaration
; (its arguments bare names, read as parameter types); inside a function it builds the object.
(compound_statement (declaration type: [(type_identifier) (qualified_identifier) (template_type)]
  @name declarator: (function_declarator declarator: (identifier)
    parameters: (parameter_list (parameter_declaration type: (type_identifier) !declarator))))
  @reference.instantiate)

(preproc_include path: (string_literal)) @reference.import
; ``using leveldb::Status;``: ``Status`` names leveldb's.
(using_declaration (qualified_identifier) @alias) @using
