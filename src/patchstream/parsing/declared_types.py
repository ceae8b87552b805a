"""Java, Rust, C# and C++ declared types, rewritten as the text the receiver helpers read.

``type_parts`` and ``container_parts`` read Python's and TypeScript's notation; a Java or
Rust type node becomes that notation here: references, ``dyn``/``impl`` and owning wrappers
(``&mut Item``, ``Box<dyn Store>``, ``Option<Item>``, ``Optional<Item>``) are the type they
hold, sequences (``Vec<Item>``, ``&[Item]``, ``List<Item>``, ``Item[]``) ``list[Item]``, and
maps (``HashMap<K, V>``, ``Map<K, V>``) ``dict[K, V]``; paths use dots (``store::Store``).
C++'s owning pointers and ``std::optional`` are what they hold (``m_state->Get()`` reaches an
``EmitterState`` through ``std::unique_ptr<EmitterState>``), and its standard containers are
sequences and maps as above.
"""

from __future__ import annotations

import tree_sitter as ts

from patchstream.parsing.source import Source

# Types that hold one value of their (first) argument: a call on them reaches it (Deref; a
# Result's and an Option's through ``?`` and ``unwrap``, ``rust_language.PASSED_THROUGH``).
_HOLDERS = frozenset({"Box", "Rc", "Arc", "Option", "RefCell", "Cell", "Mutex", "RwLock", "Cow",
                      "Pin", "Weak", "Optional", "AtomicReference", "Nullable",
                      "Lazy", "Result"})  # fmt: skip
_SEQUENCES = frozenset({
    "Vec", "VecDeque", "HashSet", "BTreeSet", "LinkedList", "BinaryHeap", "IndexSet",
    "List", "ArrayList", "Set", "TreeSet", "LinkedHashSet", "SortedSet", "Collection",
    "Iterable", "Iterator", "Deque", "ArrayDeque", "Queue", "Stream", "CopyOnWriteArrayList",
    "IList", "IEnumerable", "ICollection", "IReadOnlyList", "IReadOnlyCollection", "ISet",
    "IEnumerator", "Stack", "ConcurrentQueue", "ConcurrentBag", "MutableList", "MutableSet",
    "MutableCollection", "Sequence", "Array",
})  # fmt: skip
_MAPS = frozenset({"HashMap", "BTreeMap", "IndexMap", "Map", "TreeMap", "LinkedHashMap",
                   "SortedMap", "ConcurrentHashMap", "ConcurrentMap", "Dictionary",
                   "IDictionary", "IReadOnlyDictionary", "ConcurrentDictionary",
                   "SortedDictionary", "MutableMap"})  # fmt: skip
# C++'s standard library: ``->`` / ``*`` on these reach the one value they hold.
_CPP_HOLDERS = frozenset({"unique_ptr", "shared_ptr", "auto_ptr", "optional", "scoped_ptr",
                          "intrusive_ptr"})  # fmt: skip
_CPP_SEQUENCES = frozenset({"vector", "list", "deque", "set", "multiset", "unordered_set",
                            "unordered_multiset", "array", "span", "forward_list",
                            "initializer_list"})  # fmt: skip
_CPP_MAPS = frozenset({"map", "multimap", "unordered_map", "unordered_multimap"})
_UNWRAPPED = {"reference_type": "type", "pointer_type": "type", "dynamic_type": "trait",
              "abstract_type": "trait", "bounded_type": None,
              "nullable_type": None}  # fmt: skip
_MAX_DEPTH = 8  # nesting kept is shallow; deeper types are not a receiver we can type anyway


def declared_type(node: ts.Node, src: Source, depth: int = 0) -> str:
    """The type ``node`` declares, in the notation ``receivers.type_parts`` reads."""
    while node.type in _UNWRAPPED and depth < _MAX_DEPTH:
        field = _UNWRAPPED[node.type]
        inner = node.child_by_field_name(field) if field else node.named_child(0)
        if inner is None:
            break
        node, depth = inner, depth + 1
    qualified = node.child_by_field_name("name") if node.type == "qualified_name" else None
    if qualified is not None and qualified.type == "generic_name":  # C#'s ``System.X.List<T>``
        node = qualified
    if node.type == "array_type":  # Rust ``[Item]`` / ``[Item; 4]``, Java and C# ``Item[]``
        element = node.child_by_field_name("element") or node.child_by_field_name("type")
        return f"list[{declared_type(element, src, depth + 1)}]" if element else ""
    generic = node.type in ("generic_type", "generic_name") or (
        node.type == "user_type" and any(c.type == "type_arguments" for c in node.named_children)
    )  # Kotlin's ``List<Shape>`` is a user_type with type arguments
    if not generic or depth >= _MAX_DEPTH:
        return _dotted(src.text(node))
    named = node.child_by_field_name("type") or node.named_child(0)  # Rust / Java / C#
    listed = node.child_by_field_name("type_arguments") or next(
        (c for c in node.named_children if c.type in ("type_arguments", "type_argument_list")),
        None,
    )
    base = _dotted(src.text(named)) if named is not None else ""
    arguments = [a for a in listed.named_children if a.type != "lifetime"] if listed else []
    last = base.rsplit(".", 1)[-1]
    if last in _HOLDERS and arguments:
        return declared_type(arguments[0], src, depth + 1)
    if last in _SEQUENCES and len(arguments) == 1:
        return f"list[{declared_type(arguments[0], src, depth + 1)}]"
    if last in _MAPS and len(arguments) == 2:
        key, value = (declared_type(a, src, depth + 1) for a in arguments)
        return f"dict[{key}, {value}]"
    return base


def _dotted(text: str) -> str:
    return "".join(text.split()).replace("::", ".").removesuffix("?")


def cpp_declared_type(node: ts.Node, src: Source, depth: int = 0) -> str:
    """A C++ type as ``declared_type`` writes the others': ``std::unique_ptr<State>`` is
    ``State``, ``std::vector<Node*>`` ``list[Node]``, ``std::map<K, V>`` ``dict[K, V]``; any
    other type as written, with dots for ``::``."""
    template = node
    if node.type == "qualified_identifier":
        named = node.child_by_field_name("name")
        template = named if named is not None else node
    if template.type != "template_type" or depth >= _MAX_DEPTH:
        return src.text(node).replace("::", ".")
    name = template.child_by_field_name("name")
    listed = template.child_by_field_name("arguments")
    last = src.text(name) if name is not None else ""
    arguments = [
        argument.child_by_field_name("type") or argument
        for argument in (listed.named_children if listed is not None else [])
        if argument.type == "type_descriptor"
    ]
    if last in _CPP_HOLDERS and arguments:
        return cpp_declared_type(arguments[0], src, depth + 1)
    if last in _CPP_SEQUENCES and arguments:
        return f"list[{cpp_declared_type(arguments[0], src, depth + 1)}]"
    if last in _CPP_MAPS and len(arguments) >= 2:
        key, value = (cpp_declared_type(a, src, depth + 1) for a in arguments[:2])
        return f"dict[{key}, {value}]"
    return src.text(node).replace("::", ".")


_CASTS = frozenset({"static_cast", "dynamic_cast", "const_cast", "reinterpret_cast"})


def cast_type(call: ts.Node, src: Source) -> str | None:
    """``static_cast<const node_ref&>(*p)`` (any of the four named casts): the type it gives,
    as ``cpp_declared_type`` writes it (``node_ref``); None for any other call."""
    function = call.child_by_field_name("function")
    if function is None or function.type != "template_function":
        return None
    name, listed = function.child_by_field_name("name"), function.child_by_field_name("arguments")
    if name is None or src.text(name) not in _CASTS or listed is None:
        return None
    described = next((c for c in listed.named_children if c.type == "type_descriptor"), None)
    written = described.child_by_field_name("type") if described is not None else None
    return cpp_declared_type(written, src) if written is not None else None
