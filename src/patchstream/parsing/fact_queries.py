"""Tree-sitter queries for the type facts behind ``recv.m()`` calls, one per language.

Captures: ``@fact`` (a declaration or an assignment) with ``@name`` and ``@type`` (declared)
or ``@call`` (what builds the value); ``@owner`` for attributes (``self.x``); ``@returns``
for a function's return type; ``@loop``/``@iter`` for names bound to a container's element;
``@alias``, ``@item``, ``@unpack``, ``@cast``, ``@destructured``, ``@field``, ``@passed`` and
``@narrowed`` (a block where ``isinstance``/``instanceof`` fixed a name's type) as
``receivers.type_facts`` reads them.
"""

from __future__ import annotations

from functools import cache

import tree_sitter as ts

from patchstream.parsing.languages import get_language

_PYTHON_FACTS = """
(if_statement
  condition: (call function: (identifier) @isinstance
    arguments: (argument_list . (identifier) @name . [(identifier) (attribute)] @type .))
  consequence: (block) @narrowed)
(typed_parameter (identifier) @name type: (type) @type) @fact
(typed_default_parameter name: (identifier) @name type: (type) @type) @fact
(assignment left: (identifier) @name type: (type) @type) @fact
(assignment
  left: (attribute object: (identifier) @owner attribute: (identifier) @name)
  type: (type) @type) @fact
(assignment left: (identifier) @name right: (call function: [(identifier) (attribute)] @call)) @fact
(assignment
  left: (attribute object: (identifier) @owner attribute: (identifier) @name)
  right: (call function: [(identifier) (attribute)] @call)) @fact
(function_definition name: (identifier) @returns return_type: (type) @type) @fact
(with_item value: (as_pattern (call function: [(identifier) (attribute)] @call)
  alias: (as_pattern_target (identifier) @name))) @fact
(assignment left: (identifier) @name right: [(identifier) (attribute)] @alias) @fact
(assignment
  left: (attribute object: (identifier) @owner attribute: (identifier) @name)
  right: (identifier) @alias) @fact
(for_statement left: (identifier) @name right: (call function: [(identifier) (attribute)] @call)
  ) @loop
(for_in_clause left: (identifier) @name right: (call function: [(identifier) (attribute)] @call)
  ) @loop
(for_statement left: (identifier) @name right: [(identifier) (attribute)] @iter) @loop
(for_in_clause left: (identifier) @name right: [(identifier) (attribute)] @iter) @loop
(for_statement left: (pattern_list (identifier) (identifier) @name)
  right: (call function: (identifier) @enumerate
    arguments: (argument_list . [(identifier) (attribute)] @iter))) @loop
(assignment left: (identifier) @name right: (subscript value: [(identifier) (attribute)] @item)
  ) @fact
(assignment left: (pattern_list) @unpack
  right: (call function: [(identifier) (attribute)] @call)) @fact
(except_clause value: (as_pattern [(identifier) (attribute)] @type
  alias: (as_pattern_target (identifier) @name))) @fact
(assignment left: (identifier) @name
  right: (call function: [(identifier) (attribute)] @cast
    arguments: (argument_list . [(identifier) (attribute) (string)] @type))) @fact
"""

_TS_TYPE = "[(type_identifier) (nested_type_identifier) (generic_type) (array_type) (union_type)]"
_TS_NEW = "(new_expression constructor: [(identifier) (member_expression)] @call)"
_JS_CALLEE = "[(identifier) (member_expression)]"
# TypeScript's and JavaScript's facts that need no written type: what ``new`` built, what a
# call returns (``require`` is an import: ``modules``), ``this``'s fields, callbacks'
# parameters, narrowing by ``instanceof``.
_UNTYPED_JS_FACTS = f"""
(if_statement
  condition: (parenthesized_expression
    (binary_expression left: (identifier) @name operator: "instanceof" right: {_JS_CALLEE} @type))
  consequence: (statement_block) @narrowed)
(variable_declarator name: (identifier) @name value: {_TS_NEW}) @fact
(variable_declarator name: (identifier) @name
  value: (array . (new_expression constructor: {_JS_CALLEE} @built))) @fact
(variable_declarator name: (identifier) @name value: (call_expression function: {_JS_CALLEE} @call)
  (#not-eq? @call "require")) @fact
(variable_declarator name: (identifier) @name
  value: (member_expression object: (this) property: (property_identifier)) @alias) @fact
(variable_declarator name: (object_pattern (shorthand_property_identifier_pattern) @name)
  value: (this)) @destructured
(assignment_expression
  left: (member_expression object: (this) @owner property: (property_identifier) @name)
  right: {_TS_NEW}) @fact
(call_expression
  function: (member_expression object: {_JS_CALLEE} @iter property: (property_identifier) @method)
  arguments: (arguments . (arrow_function) @callback)) @loop
(for_in_statement left: (identifier) @name right: {_JS_CALLEE} @iter) @loop
(call_expression function: {_JS_CALLEE} @callee
  arguments: (arguments [(arrow_function) (function_expression)] @passed))
(new_expression constructor: {_JS_CALLEE} @callee
  arguments: (arguments [(arrow_function) (function_expression)] @passed))
"""
_TYPESCRIPT_FACTS = f"""{_UNTYPED_JS_FACTS}
(required_parameter pattern: [(identifier) (this)] @name type: (type_annotation {_TS_TYPE} @type)
  ) @fact
(optional_parameter pattern: (identifier) @name type: (type_annotation {_TS_TYPE} @type)) @fact
(required_parameter (accessibility_modifier) pattern: (identifier) @name
  type: (type_annotation {_TS_TYPE} @type)) @field
(public_field_definition name: (property_identifier) @name
  type: (type_annotation {_TS_TYPE} @type)) @fact
(public_field_definition name: (property_identifier) @name value: {_TS_NEW}) @fact
(variable_declarator name: (identifier) @name type: (type_annotation {_TS_TYPE} @type)) @fact
(function_declaration name: (identifier) @returns
  return_type: (type_annotation {_TS_TYPE} @type)) @fact
(method_definition name: (property_identifier) @returns
  return_type: (type_annotation {_TS_TYPE} @type)) @fact
(method_signature name: (property_identifier) @returns
  return_type: (type_annotation {_TS_TYPE} @type)) @fact
"""
# JavaScript: no written types, but JSDoc's (``jsdoc``).
_JAVASCRIPT_FACTS = f"""{_UNTYPED_JS_FACTS}
(field_definition property: (property_identifier) @name value: {_TS_NEW}) @fact
((comment) @doc . [(function_declaration) (method_definition) (expression_statement)
  (lexical_declaration) (variable_declaration)] @documented)
"""

_GO_TYPE = "[(type_identifier) (qualified_type) (pointer_type)]"
_GO_NEW = ("[(composite_literal type: [(type_identifier) (qualified_type)] @call) "
           "(unary_expression operand: (composite_literal type: [(type_identifier) "
           "(qualified_type)] @call)) (call_expression function: [(identifier) "
           "(selector_expression)] @call)]")  # fmt: skip
_GO_FACTS = f"""
(parameter_declaration name: (identifier) @name type: {_GO_TYPE} @type) @fact
(field_declaration name: (field_identifier) @name type: {_GO_TYPE} @type) @fact
(var_spec name: (identifier) @name type: {_GO_TYPE} @type) @fact
(short_var_declaration left: (expression_list . (identifier) @name)
  right: (expression_list . {_GO_NEW})) @fact
(function_declaration name: (identifier) @returns result: {_GO_TYPE} @type) @fact
(method_declaration name: (field_identifier) @returns result: {_GO_TYPE} @type) @fact
(method_elem name: (field_identifier) @returns result: {_GO_TYPE} @type) @fact
"""

_JAVA_TYPE = "[(type_identifier) (scoped_type_identifier) (generic_type) (array_type)]"
_JAVA_FACTS = f"""
(formal_parameter type: {_JAVA_TYPE} @type name: (identifier) @name) @fact
(field_declaration type: {_JAVA_TYPE} @type
  declarator: (variable_declarator name: (identifier) @name)) @fact
(local_variable_declaration type: {_JAVA_TYPE} @type
  declarator: (variable_declarator name: (identifier) @name)) @fact
(local_variable_declaration declarator: (variable_declarator name: (identifier) @name
  value: (object_creation_expression type: [(type_identifier) (scoped_type_identifier)
    (generic_type)] @call))) @fact
(local_variable_declaration declarator: (variable_declarator name: (identifier) @name
  value: (method_invocation object: [(identifier) (field_access)]? @object
    name: (identifier) @call))) @fact
(enhanced_for_statement type: {_JAVA_TYPE} @type name: (identifier) @name) @fact
(method_declaration type: {_JAVA_TYPE} @type name: (identifier) @returns) @fact
"""

_CS_TYPE = "[(identifier) (qualified_name) (generic_name) (array_type) (nullable_type)]"
_CS_BUILT = "[(identifier) (qualified_name) (generic_name)]"
_CSHARP_FACTS = f"""
(parameter type: {_CS_TYPE} @type name: (identifier) @name) @fact
(variable_declaration type: {_CS_TYPE} @type (variable_declarator name: (identifier) @name)) @fact
(property_declaration type: {_CS_TYPE} @type name: (identifier) @name) @fact
(variable_declaration type: (implicit_type) (variable_declarator name: (identifier) @name
  (object_creation_expression type: {_CS_BUILT} @type))) @fact
(variable_declaration type: (implicit_type) (variable_declarator name: (identifier) @name
  (invocation_expression function: [(identifier) (member_access_expression)] @call))) @fact
(variable_declaration type: (implicit_type) (variable_declarator name: (identifier) @name
  [(identifier) (member_access_expression)] @call)) @fact
(foreach_statement type: {_CS_TYPE} @type left: (identifier) @name) @fact
(foreach_statement type: (implicit_type) left: (identifier) @name
  right: [(identifier) (member_access_expression)] @iter) @loop
(declaration_pattern type: {_CS_TYPE} @type name: (identifier) @name) @fact
(method_declaration returns: {_CS_TYPE} @type name: (identifier) @returns) @fact
"""

_KT_TYPE = "[(user_type) (nullable_type)]"
_KOTLIN_FACTS = f"""
(parameter (identifier) @name {_KT_TYPE} @type) @fact
(class_parameter (identifier) @name {_KT_TYPE} @type) @fact
(property_declaration (variable_declaration (identifier) @name {_KT_TYPE} @type)) @fact
(property_declaration (variable_declaration (identifier) @name .)
  (call_expression . [(identifier) (navigation_expression)] @call)) @fact
(property_declaration (variable_declaration (identifier) @name .)
  (as_expression {_KT_TYPE} @type .)) @fact
(property_declaration (variable_declaration (identifier) @name .) (navigation_expression) @call)
  @fact
(property_declaration (variable_declaration (identifier) @name .)
  [(index_expression . (identifier) @item)
   (binary_expression . (index_expression . (identifier) @item) "?:")
   (unary_expression . (index_expression . (identifier) @item) "!!")]) @fact
(function_declaration name: (identifier) @returns (function_value_parameters) . {_KT_TYPE} @type)
  @fact
(function_declaration name: (identifier) @returns (function_value_parameters) .
  (function_body . (call_expression . [(identifier) (navigation_expression)] @type))
  (#match? @type "(^|[.])[A-Z][A-Za-z0-9_]*$")) @fact
(function_declaration name: (identifier) @returns (function_value_parameters) .
  (function_body . [(this_expression)
                    (call_expression . (identifier) @scoped (#any-of? @scoped "apply" "also")
                      . (annotated_lambda))] @self)) @fact
(for_statement (variable_declaration (identifier) @name {_KT_TYPE} @type)) @fact
(if_expression
  condition: [(is_expression left: (identifier) @name "is" right: {_KT_TYPE} @type)
              (binary_expression left: (is_expression left: (identifier) @name "is"
                                                      right: {_KT_TYPE} @type))]
  . (_) @narrowed)
(when_expression (when_subject (identifier) @name)
  (when_entry condition: (type_test "is" {_KT_TYPE} @type) . (_) @narrowed))
(catch_block (identifier) @name {_KT_TYPE} @type (block) @narrowed)
(for_statement (variable_declaration (identifier) @name .)
  [(identifier) (navigation_expression)] @iter) @loop
(call_expression (navigation_expression . [(identifier) (navigation_expression)] @iter
  (identifier) @method .) (annotated_lambda (lambda_literal) @callback)) @loop
"""

_SCALA_TYPE = "[(type_identifier) (generic_type) (stable_type_identifier)]"
_SCALA_FACTS = f"""
(parameter name: (identifier) @name type: {_SCALA_TYPE} @type) @fact
(parameter name: (identifier) @name type: (lazy_parameter_type type: {_SCALA_TYPE} @type)) @fact
(class_parameter name: (identifier) @name type: {_SCALA_TYPE} @type) @fact
(val_definition pattern: (identifier) @name type: {_SCALA_TYPE} @type) @fact
(var_definition pattern: (identifier) @name type: {_SCALA_TYPE} @type) @fact
(val_definition pattern: (identifier) @name
  value: (instance_expression . [(type_identifier) (generic_type)] @type)) @fact
(val_definition pattern: (identifier) @name
  value: (call_expression function: [(identifier) (field_expression)] @call)) @fact
(function_definition name: (identifier) @returns return_type: {_SCALA_TYPE} @type) @fact
(function_declaration name: (identifier) @returns return_type: {_SCALA_TYPE} @type) @fact
"""

_PHP_TYPE = "[(named_type) (optional_type)]"
_PHP_BUILT = "(object_creation_expression [(name) (qualified_name)] @call)"
_PHP_FACTS = f"""
(simple_parameter type: {_PHP_TYPE} @type name: (variable_name) @name) @fact
(property_promotion_parameter type: {_PHP_TYPE} @type name: (variable_name) @name) @field
(property_declaration type: {_PHP_TYPE} @type (property_element (variable_name) @name)) @fact
(assignment_expression left: (variable_name) @name right: {_PHP_BUILT}) @fact
(assignment_expression
  left: (member_access_expression object: (variable_name) @owner name: (name) @name)
  right: {_PHP_BUILT}) @fact
(method_declaration name: (name) @returns return_type: {_PHP_TYPE} @type) @fact
(function_definition name: (name) @returns return_type: {_PHP_TYPE} @type) @fact
(assignment_expression left: (variable_name) @name
  right: [(member_call_expression object: (_) @object name: (name) @call)
          (scoped_call_expression scope: (_) @object name: (name) @call)]) @fact
(assignment_expression left: (variable_name) @name
  right: (function_call_expression function: [(name) (qualified_name)] @call)) @fact
((comment) @doc . [(method_declaration) (function_definition) (property_declaration)
  (expression_statement)] @documented)
"""

_RUBY_BUILT = """(call receiver: [(constant) (scope_resolution)] @call method: (identifier) @new
  (#eq? @new "new"))"""
_RUBY_FACTS = f"""
(assignment left: [(identifier) (instance_variable) (class_variable)] @name
  right: {_RUBY_BUILT}) @fact
(operator_assignment left: [(identifier) (instance_variable) (class_variable)] @name
  right: {_RUBY_BUILT}) @fact
"""

_SWIFT_NAMED_TYPE = "[(user_type) (optional_type (user_type))]"
_SWIFT_TYPE = "[(user_type) (optional_type (user_type)) (array_type) (dictionary_type)]"
_SWIFT_FACTS = f"""
(parameter name: (simple_identifier) @name {_SWIFT_TYPE} @type) @fact
(property_declaration name: (pattern (simple_identifier) @name)
  (type_annotation {_SWIFT_TYPE} @type)) @fact
(protocol_property_declaration name: (pattern (simple_identifier) @name)
  (type_annotation {_SWIFT_TYPE} @type)) @fact
(property_declaration name: (pattern (simple_identifier) @name)
  value: (call_expression . (simple_identifier) @call)) @fact
(function_declaration name: (simple_identifier) @returns {_SWIFT_NAMED_TYPE} @type
  . (function_body))
  @fact
(property_declaration name: (pattern (simple_identifier) @name)
  value: (try_expression expr: (call_expression . (simple_identifier) @call))) @fact
(property_declaration name: (pattern (simple_identifier) @name)
  value: [(call_expression . (navigation_expression target: (_) @object
            suffix: (navigation_suffix suffix: (simple_identifier) @call)))
          (try_expression expr: (call_expression . (navigation_expression target: (_) @object
            suffix: (navigation_suffix suffix: (simple_identifier) @call))))]) @fact
(if_statement bound_identifier: (simple_identifier) @name
  (as_expression {_SWIFT_TYPE} @type)) @fact
(guard_statement bound_identifier: (simple_identifier) @name
  (as_expression {_SWIFT_TYPE} @type)) @fact
(property_declaration name: (pattern (simple_identifier) @name)
  value: (as_expression {_SWIFT_TYPE} @type)) @fact
(type_parameter (type_identifier) @name {_SWIFT_TYPE} @type) @fact
(class_declaration (type_constraints (type_constraint (inheritance_constraint
  (identifier (simple_identifier) @name) (user_type) @type))) (class_body) @narrowed)
(function_declaration (type_constraints (type_constraint (inheritance_constraint
  (identifier (simple_identifier) @name) (user_type) @type))) (function_body) @narrowed)
(init_declaration (type_constraints (type_constraint (inheritance_constraint
  (identifier (simple_identifier) @name) (user_type) @type))) (function_body) @narrowed)
(associatedtype_declaration (type_identifier) @name (user_type) @type) @fact
(property_declaration name: (pattern (simple_identifier) @name) value: (simple_identifier) @call)
  @fact
(catch_block . (catch_keyword) . (statements) @implicit_error)
(call_expression . [(simple_identifier) (navigation_expression)] @callee
  (call_suffix [(lambda_literal) @passed
                (value_arguments (value_argument value: (lambda_literal) @passed))]))
(call_expression (navigation_expression target: [(simple_identifier) (navigation_expression)] @iter
    suffix: (navigation_suffix suffix: (simple_identifier) @method))
  (call_suffix [(lambda_literal) @callback
                (value_arguments (value_argument value: (lambda_literal) @callback))])) @loop
"""

_RUST_FACTS = """
(parameter pattern: (identifier) @name type: (_) @type) @fact
(let_declaration pattern: (identifier) @name type: (_) @type) @fact
(let_declaration pattern: (identifier) @name
  value: (call_expression function: [(identifier) (scoped_identifier) (field_expression)] @call)
  ) @fact
(let_declaration pattern: (identifier) @name
  value: (struct_expression name: [(type_identifier) (scoped_type_identifier)] @call)) @fact
(let_declaration pattern: (identifier) @name
  value: (try_expression
    (call_expression function: [(identifier) (scoped_identifier) (field_expression)] @call))
  ) @fact
(field_declaration name: (field_identifier) @name type: (_) @type) @fact
(struct_item body: (ordered_field_declaration_list) @tuple_fields)
(function_item name: (identifier) @returns return_type: (_) @type) @fact
(function_signature_item name: (identifier) @returns return_type: (_) @type) @fact
(for_expression pattern: (identifier) @name value: [(identifier) (field_expression)] @iter) @loop
(for_expression pattern: (identifier) @name
  value: (reference_expression value: [(identifier) (field_expression)] @iter)) @loop
(for_expression pattern: (identifier) @name
  value: (call_expression function: (field_expression
    value: [(identifier) (field_expression)] @iter field: (field_identifier) @_each))
  (#any-of? @_each "iter" "iter_mut" "into_iter" "drain")) @loop
(call_expression
  function: (field_expression
    value: (call_expression function: (field_expression
      value: [(identifier) (field_expression)] @iter field: (field_identifier) @_each))
    field: (field_identifier) @method)
  arguments: (arguments . (closure_expression) @callback)
  (#any-of? @_each "iter" "iter_mut" "into_iter")) @loop
; ``Option``'s adapters: ``maybe.map(|m| ..)``, ``self.0.as_ref().map_or(0, |c| ..)``: the
; closure's parameter is what the option holds (its element, as a holder is read through).
(call_expression
  function: (field_expression value: [(identifier) (field_expression)] @iter
    field: (field_identifier) @method)
  arguments: (arguments . (closure_expression) @callback)
  (#any-of? @method "map" "and_then" "is_some_and" "is_ok_and" "inspect" "filter")) @loop
(call_expression
  function: (field_expression
    value: (call_expression function: (field_expression
      value: [(identifier) (field_expression)] @iter field: (field_identifier) @_held))
    field: (field_identifier) @method)
  arguments: (arguments . (closure_expression) @callback)
  (#any-of? @_held "as_ref" "as_mut")
  (#any-of? @method "map" "and_then" "is_some_and" "is_ok_and" "inspect" "filter")) @loop
(call_expression
  function: (field_expression value: [(identifier) (field_expression)] @iter
    field: (field_identifier) @method)
  arguments: (arguments . (_) . (closure_expression) @callback)
  (#eq? @method "map_or")) @loop
(call_expression
  function: (field_expression
    value: (call_expression function: (field_expression
      value: [(identifier) (field_expression)] @iter field: (field_identifier) @_held))
    field: (field_identifier) @method)
  arguments: (arguments . (_) . (closure_expression) @callback)
  (#any-of? @_held "as_ref" "as_mut")
  (#eq? @method "map_or")) @loop
(match_arm pattern: (match_pattern (tuple_struct_pattern) @variant)) @arm
(let_condition pattern: (tuple_struct_pattern) @variant value: (_) @value) @arm
"""

_CPP_TYPE = "[(type_identifier) (qualified_identifier) (template_type)]"
_CPP_NAMED = (
    "[{name} @name (pointer_declarator declarator: {name} @name) "
    "(reference_declarator {name} @name) "
    "(pointer_declarator declarator: (pointer_declarator declarator: {name} @name))]"
)
_CPP_VAR = _CPP_NAMED.format(name="(identifier)")
_CPP_FACTS = f"""
(parameter_declaration type: {_CPP_TYPE} @type declarator: {_CPP_VAR}) @fact
(optional_parameter_declaration type: {_CPP_TYPE} @type declarator: {_CPP_VAR}) @fact
(declaration type: {_CPP_TYPE} @type declarator: {_CPP_VAR}) @fact
(declaration type: {_CPP_TYPE} @type declarator: (init_declarator declarator: {_CPP_VAR})) @fact
(field_declaration type: {_CPP_TYPE} @type
  declarator: {_CPP_NAMED.format(name="(field_identifier)")}) @fact
(for_range_loop type: {_CPP_TYPE} @type declarator: {_CPP_VAR}) @fact
(compound_statement (declaration type: {_CPP_TYPE} @type
  declarator: (function_declarator declarator: (identifier) @name
    parameters: (parameter_list (parameter_declaration type: (type_identifier) !declarator))))
  @fact)
(field_declaration type: {_CPP_TYPE} @type
  declarator: (array_declarator declarator: (field_identifier) @name)) @fact @array
(declaration type: {_CPP_TYPE} @type
  declarator: (array_declarator declarator: (identifier) @name)) @fact @array
(function_definition type: {_CPP_TYPE} @type declarator: [
  (function_declarator declarator: _ @returns)
  (pointer_declarator declarator: (function_declarator declarator: _ @returns))
  (reference_declarator (function_declarator declarator: _ @returns))]) @fact
"""

_FACTS = {"python": _PYTHON_FACTS, "typescript": _TYPESCRIPT_FACTS, "tsx": _TYPESCRIPT_FACTS,
          "javascript": _JAVASCRIPT_FACTS,
          "go": _GO_FACTS, "java": _JAVA_FACTS, "rust": _RUST_FACTS,
          "cpp": _CPP_FACTS, "csharp": _CSHARP_FACTS, "kotlin": _KOTLIN_FACTS,
          "scala": _SCALA_FACTS, "php": _PHP_FACTS, "ruby": _RUBY_FACTS,
          "swift": _SWIFT_FACTS}  # fmt: skip


@cache
def facts_query(language: str) -> ts.Query | None:
    source = _FACTS.get(language)
    return ts.Query(get_language(language), source) if source else None
