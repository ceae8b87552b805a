; Functions, through up to two pointer declarators (``char **dup(...)``).
(function_definition declarator: (function_declarator declarator: (identifier) @name)) @definition.function
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))) @definition.function
(function_definition declarator: (pointer_declarator declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name)))) @definition.function
; A function-like macro is called like a function.
(preproc_function_def name: (identifier) @name) @definition.function

(struct_specifier name: (type_identifier) @name body: (field_declaration_list)) @definition.class
(union_specifier name: (type_identifier) @name body: (field_declaration_list)) @definition.class
(enum_specifier name: (type_identifier) @name body: (enumerator_list)) @definition.class
; ``typedef struct { ... } name_t;``: the struct's only name is the typedef's.
(type_definition type: [(struct_specifier !name body: (field_declaration_list))
                        (union_specifier !name body: (field_declaration_list))
                        (enum_specifier !name body: (enumerator_list))]
                 declarator: (type_identifier) @name) @definition.class

(translation_unit (declaration declarator: (init_declarator declarator: (identifier) @name)) @definition.variable)
(translation_unit (declaration declarator: (identifier) @name) @definition.variable)

; Direct calls; a call through a struct's function pointer (``ops->run()``) names no function.
(call_expression function: (identifier) @name) @reference.call

(preproc_include path: (string_literal)) @reference.import
