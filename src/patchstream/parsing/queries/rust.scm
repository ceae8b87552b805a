(struct_item name: (type_identifier) @name) @definition.class
(enum_item name: (type_identifier) @name) @definition.class
(union_item name: (type_identifier) @name) @definition.class
(trait_item name: (type_identifier) @name) @definition.interface
(function_item name: (identifier) @name) @definition.function
(function_signature_item name: (identifier) @name) @definition.function
(mod_item name: (identifier) @name body: (declaration_list)) @definition.module
(impl_item type: [(type_identifier) @name (generic_type type: (type_identifier) @name) (scoped_type_identifier) @name]) @definition.impl

(source_file (const_item name: (identifier) @name) @definition.variable)
(source_file (static_item name: (identifier) @name) @definition.variable)
(mod_item body: (declaration_list (const_item name: (identifier) @name) @definition.variable))
(mod_item body: (declaration_list (static_item name: (identifier) @name) @definition.variable))

(impl_item
  trait: [(type_identifier) (scoped_type_identifier) (generic_type)] @name
  type: [(type_identifier) (generic_type type: (type_identifier)) (scoped_type_identifier)] @type) @reference.inherit
(trait_item
  name: (type_identifier) @type
  bounds: (trait_bounds [(type_identifier) (scoped_type_identifier) (generic_type)] @name)) @reference.inherit

(call_expression function: [(identifier) (scoped_identifier) (field_expression)] @name) @reference.call
(call_expression function: (generic_function function: [(identifier) (scoped_identifier) (field_expression)] @name)) @reference.call
(struct_expression name: [(type_identifier) (scoped_type_identifier)] @name) @reference.instantiate

(use_declaration) @reference.import

; ``type OwnedDFA = DFA<Vec<u32>>``: the alias is a type whose base is the type it names, so
; ``OwnedDFA::new()`` finds DFA's ``new``; an ``impl OwnedDFA`` block is DFA's (``definitions``).
(type_item
  name: (type_identifier) @name
  type: [(type_identifier) (generic_type type: (type_identifier))]) @definition.class
(type_item
  name: (type_identifier) @type
  type: [(type_identifier) @name (generic_type type: (type_identifier) @name)]) @reference.inherit

; ``pub use self::nfa::{NFA, State}``: a type re-exported here is found under this module's
; name too (``crate::nfa::thompson::NFA``); it stands for the type it names (its base, see
; ``definitions``). Types only: a re-exported function is left to a later version.
(use_declaration (visibility_modifier) argument: [
  (scoped_identifier name: (identifier) @name @definition.class)
  (use_as_clause alias: (identifier) @name @definition.class)
  (scoped_use_list list: (use_list [
    (identifier) @name @definition.class
    (scoped_identifier name: (identifier) @name @definition.class)
    (use_as_clause alias: (identifier) @name @definition.class)
    (scoped_use_list list: (use_list [
      (identifier) @name @definition.class
      (scoped_identifier name: (identifier) @name @definition.class)
      (use_as_clause alias: (identifier) @name @definition.class)]))]))]
  (#match? @name "^[A-Z]"))
