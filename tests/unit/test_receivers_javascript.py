"""JavaScript receivers as a checker reading JavaScript types them: CommonJS ``require``
(destructured, a module's exports object, or the class it exports), JSDoc types
(``@param``, ``@type``, ``@returns``), what ``new`` built in an enclosing function, and a
callback whose parameter is named like the receiver it is passed to (no endless typing)."""

from __future__ import annotations

from patchstream.parsing.filestate import FileStateBuilder
from patchstream.parsing.jsdoc import jsdoc_tags
from tests.conftest import build_state

RULE = b"""const astUtils = require("./utils/ast-utils");
const { getPrecedence, isParen: isParenthesised } = require("./utils/ast-utils");
const ForkContext = require("../code-path/fork-context");
var lodash = require("lodash");

function check(node) {
    return astUtils.isTokenOnSameLine(node) && getPrecedence(node) && isParenthesised(node);
}

function build() {
    return ForkContext.newEmpty(null) && new ForkContext() && lodash.merge({});
}
"""

STATE = b"""const ForkContext = require("./fork-context");

class OffsetStorage { setDesiredOffsets(a) { return a; } }

class State {
    constructor() {
        /** @type {ForkContext} */
        this.forkContext = ForkContext.newEmpty(null);
        /** @type {?OffsetStorage} */
        const offsets = make();
        offsets.setDesiredOffsets(1);
    }

    makeBody() {
        const forkContext = this.forkContext;
        forkContext.replaceHead(1);
        this.forkContext.add(2);
    }

    /**
     * @param {ForkContext|null} context The context.
     * @param {Object} [options.cwd] not a parameter: a property of one.
     * @returns {ForkContext} the head.
     */
    other(context) {
        context.makeNext(1);
        return context;
    }

    third() { this.other(null).clear(); }
}

module.exports = {
    create(context) {
        const offsets = new OffsetStorage();
        return {
            Program(node) { offsets.setDesiredOffsets(node); },
        };
    },
};
"""


def _calls(path: str, source: bytes, caller: str) -> set[str]:
    state = build_state(FileStateBuilder(), path, source)
    prefix = f"r::{state.path}::"
    return {
        e.dst.removeprefix(prefix) if e.ref is None else f"ref:{e.ref.name}@{e.ref.module}"
        for e in state.edges
        if e.type.value in ("CALLS", "INSTANTIATES") and e.src == f"{prefix}{caller}"
    }


def test_commonjs_require_binds_names_as_imports_do() -> None:
    assert _calls("lib/rules/rule.js", RULE, "check") == {
        "ref:isTokenOnSameLine@lib/rules/utils/ast-utils",  # the exports object's member
        "ref:getPrecedence@lib/rules/utils/ast-utils",  # destructured
        "ref:isParen@lib/rules/utils/ast-utils",  # destructured under another name
    }
    assert _calls("lib/rules/rule.js", RULE, "build") == {
        "ref:ForkContext.newEmpty@lib/code-path/fork-context",  # the class it exports
        "ref:ForkContext@lib/code-path/fork-context",
        "ref:merge@lodash",
    }


def test_a_required_name_is_no_variable_of_the_file() -> None:
    state = build_state(FileStateBuilder(), "lib/rules/rule.js", RULE)
    names = {symbol.qualified_name for symbol in state.symbols}
    assert {"check", "build"} <= names
    assert not names & {"astUtils", "ForkContext", "lodash", "getPrecedence"}


def test_jsdoc_types_type_receivers() -> None:
    module = "lib/fork-context"
    assert _calls("lib/state.js", STATE, "State.makeBody") == {
        f"ref:ForkContext.replaceHead@{module}",  # through ``const x = this.forkContext``
        f"ref:ForkContext.add@{module}",  # ``/** @type {ForkContext} */ this.forkContext``
    }
    assert _calls("lib/state.js", STATE, "State.other") == {f"ref:ForkContext.makeNext@{module}"}
    assert f"ref:ForkContext.clear@{module}" in _calls("lib/state.js", STATE, "State.third")
    assert "OffsetStorage.setDesiredOffsets" in _calls("lib/state.js", STATE, "State.constructor")


def test_a_variable_new_built_is_typed_in_the_functions_inside() -> None:
    assert _calls("lib/state.js", STATE, "create.Program") == {"OffsetStorage.setDesiredOffsets"}


def test_jsdoc_tags_read_one_named_type() -> None:
    comment = """/**
     * @param {ForkContext|null} context The context.
     * @param {string} name a primitive: no class.
     * @param {Foo|Bar} either two types: unknown.
     * @param {Object} [options.cwd] a property of a parameter.
     * @arg {?Token} [token=null] optional.
     * @returns {CodePath} the path.
     * @type {!Map<string, Node>}
     */"""
    assert jsdoc_tags(comment) == [
        ("param", "context", "ForkContext"),
        ("param", "token", "Token"),
        ("return", None, "CodePath"),
        ("var", None, "Map<string, Node>"),
    ]
    assert jsdoc_tags("/* @param {Foo} x */") == []  # not a doc comment


def test_a_callback_parameter_named_like_its_receiver_ends() -> None:
    """mocha's runner.js: ``runner.on(E, function (runner) { runner.on(..) })`` typed the
    inner ``runner`` by the call it is passed to, which is ``runner.on`` again, without end
    (RecursionError: the file lost every edge). In TypeScript too."""
    source = b"""function wire(runner) {
    runner.on("end", function (runner) {
        runner.on("again", function (runner) { runner.emit("x"); });
    });
}
"""
    for path in ("lib/runner.js", "src/runner.ts"):
        calls = _calls(path, source.replace(b"wire(runner)", b"wire(runner: any)")
                       if path.endswith(".ts") else source, "wire")  # fmt: skip
        assert "ref:runner.on@None" in calls, (path, calls)
