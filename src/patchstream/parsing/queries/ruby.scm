; Modules (namespaces and mixins) and classes, methods (``def self.m``: the class's own, named
; as its methods are) and constants.
(module name: [(constant) (scope_resolution)] @name) @definition.class
(class name: [(constant) (scope_resolution)] @name) @definition.class
(method name: [(identifier) (constant) (setter) (operator)] @name) @definition.function
(singleton_method name: [(identifier) (constant) (setter) (operator)] @name) @definition.function
(body_statement (assignment left: (constant) @name) @definition.variable)

; ``class Q < Base`` (built with Q: ``super`` in its ``initialize`` runs Base's), and the
; modules a class or module mixes in.
(class name: (_) @type superclass: (superclass [(constant) (scope_resolution)] @name))
  @reference.inherit
(class name: (_) @type body: (body_statement (call !receiver method: (identifier) @mixin
  arguments: (argument_list [(constant) (scope_resolution)] @name))
  (#any-of? @mixin "include" "extend" "prepend"))) @reference.inherit
(module name: (_) @type body: (body_statement (call !receiver method: (identifier) @mixin
  arguments: (argument_list [(constant) (scope_resolution)] @name))
  (#any-of? @mixin "include" "extend" "prepend"))) @reference.inherit

; Calls: ``x.m``, ``Foo::Bar.m``, ``self.m``, ``m(..)``, and ``m`` alone where no local of
; that name is in scope (``ruby_language``); ``Foo.new`` builds a Foo; ``super`` runs the
; base's method of the name (its ``initialize``: the base is built).
(call receiver: (_) @receiver method: (identifier) @name (#not-eq? @name "new")) @reference.call
(call !receiver method: (identifier) @name) @reference.call
(super) @name @reference.call
(call receiver: [(constant) (scope_resolution)] @name method: (identifier) @new
  (#eq? @new "new")) @reference.instantiate
[(body_statement (identifier) @name @reference.call)
 (block_body (identifier) @name @reference.call)
 (argument_list (identifier) @name @reference.call)
 (parenthesized_statements (identifier) @name @reference.call)
 (then (identifier) @name @reference.call)
 (else (identifier) @name @reference.call)
 (interpolation (identifier) @name @reference.call)
 (pair (identifier) @name @reference.call)
 (array (identifier) @name @reference.call)
 (binary (identifier) @name @reference.call)
 (unary (identifier) @name @reference.call)
 (conditional (identifier) @name @reference.call)
 (if (identifier) @name @reference.call)
 (unless (identifier) @name @reference.call)
 (while (identifier) @name @reference.call)
 (until (identifier) @name @reference.call)
 (element_reference (identifier) @name @reference.call)
 (begin (identifier) @name @reference.call)
 (do (identifier) @name @reference.call)
 (if_modifier (identifier) @name @reference.call)
 (unless_modifier (identifier) @name @reference.call)
 (case (identifier) @name @reference.call)
 (when (pattern (identifier) @name @reference.call))]
(assignment right: (identifier) @name @reference.call)
(operator_assignment right: (identifier) @name @reference.call)
(call receiver: (identifier) @name @reference.call)

(call !receiver method: (identifier) @require
  arguments: (argument_list . (string (string_content)))
  (#any-of? @require "require" "require_relative")) @reference.import
