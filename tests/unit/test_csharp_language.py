"""C# (issue #56): namespaces (block and file-scoped) in qualified names, classes, structs,
records, interfaces, nested types, properties and fields; calls looked up from where they
are written outward, then in the namespaces ``using`` opens (``using static`` and aliases
too); declared receiver types, ``this.``/``base.``, constructor chaining, overloads by
arity; broken code keeping its last good state; hostile ``using`` lists bounded."""

from __future__ import annotations

from pathlib import Path

from patchstream.parsing.filestate import FileStateBuilder
from patchstream.parsing.languages import language_for
from patchstream.parsing.modules import CS_GLOBAL
from patchstream.schemas.graph import EdgeType, Reference, SymbolKind
from patchstream.schemas.state import FileState
from patchstream.stores.graph.keys import reference_keys, symbol_key
from tests.conftest import build_state
from tests.key_joins import SCOPE, joined_callers

SHAPES = Path(__file__).resolve().parents[1] / "fixtures" / "csharp_shapes"


def _states(builder: FileStateBuilder) -> dict[str, FileState]:
    return {p.name: build_state(builder, f"csharp_shapes/{p.name}", p.read_bytes())
            for p in sorted(SHAPES.iterdir())}  # fmt: skip


def test_csharp_symbols_carry_their_namespaces(builder: FileStateBuilder) -> None:
    states = _states(builder)
    assert {s.language for s in states.values()} == {"csharp"}
    assert language_for("a/B.cs", b"class B {}") == "csharp"
    kinds = {s.qualified_name.removeprefix("Acme.Shapes."): s.kind.value
             for s in states["Shapes.cs"].symbols
             if s.kind not in (SymbolKind.FILE, SymbolKind.MODULE)}  # fmt: skip
    assert kinds == {
        "IShape": "interface", "IShape.Area": "function", "Shape": "class",
        "Shape.log": "variable", "Shape.Shape": "function", "Shape.Name": "variable",
        "Shape.Area": "function", "Shape.Describe": "function", "Shape.Total": "function",
        "Square": "class", "Square.side": "variable", "Square.Square": "function",
        "Square.Area": "function", "Square.Describe": "function", "Square.Builder": "class",
        "Square.Builder.Build": "function",
    }  # fmt: skip
    # ``namespace Acme.Util;`` names the whole file's.
    logger = {s.qualified_name for s in states["Logger.cs"].symbols}
    assert {"Acme.Util.Logger.Write", "Acme.Util.Format.Number", "Acme.Util.Tracing"} <= logger
    square = next(
        s for s in states["Shapes.cs"].symbols if s.qualified_name == "Acme.Shapes.Square"
    )
    # One program-wide namespace: the key is the full name, whatever the file.
    assert symbol_key(SCOPE, "", square) == f"{SCOPE}|{CS_GLOBAL}|Acme.Shapes.Square"


def test_csharp_calls_resolve_through_scopes_and_usings(builder: FileStateBuilder) -> None:
    """Checked by hand against the source: every call and construction of the project's
    own code (Console, StringBuilder and ``double.ToString`` are .NET's)."""
    assert joined_callers(_states(builder), "csharp", CS_GLOBAL) == {
        ("Acme.App.Program.Main", "Acme.Shapes.Square"),  # new Square(..), opened namespace
        ("Acme.App.Program.Main", "Acme.Shapes.Square.Builder"),  # a nested class
        ("Acme.App.Program.Main", "Acme.Shapes.Square.Builder.Build"),  # on what new builds
        ("Acme.App.Program.Main", "Acme.Shapes.Square.Describe"),  # var square = new Square
        ("Acme.App.Program.Main", "Acme.Shapes.Shape.Total"),  # a static method
        ("Acme.App.Program.Main", "Acme.Util.Logger"),  # new Log(..): an alias
        ("Acme.App.Program.Main", "Acme.Util.Logger.Child"),  # Log log: the alias's type
        ("Acme.App.Program.Main", "Acme.Util.Logger.Write"),  # on what Child returns
        ("Acme.App.Program.Main", "Acme.Util.Format.Number"),
        ("Acme.App.Program.Main", "Acme.Util.Tracing.Trace"),  # using static
        ("Acme.App.Program.Main", "Acme.App.Program.Report"),
        ("Acme.App.Program.Report", "Acme.Shapes.Shape.Describe"),  # shape?.Describe()
        ("Acme.Shapes.Shape", "Acme.Util.Logger"),  # a field's initializer
        ("Acme.Shapes.Shape.Describe", "Acme.Shapes.Shape.Area"),  # bare: the class's
        ("Acme.Shapes.Shape.Describe", "Acme.Util.Logger.Write"),  # log: a declared field
        ("Acme.Shapes.Shape.Describe", "Acme.Util.Format.Number"),
        ("Acme.Shapes.Shape.Total", "Acme.Shapes.IShape.Area"),  # foreach (IShape shape ..)
        ("Acme.Shapes.Square", "Acme.Shapes.Shape"),  # its constructors run Shape's
        ("Acme.Shapes.Square.Builder.Build", "Acme.Shapes.Square"),
        ("Acme.Shapes.Square.Describe", "Acme.Shapes.Shape.Describe"),  # base.Describe()
        ("Acme.Shapes.Square.Describe", "Acme.Util.Format.Number"),
        ("Acme.Shapes.Square.Describe", "Acme.Util.Tracing.Trace"),
        ("Acme.Shapes.Square.Square", "Acme.Shapes.Shape"),  # : base("square")
        ("Acme.Shapes.Square.Square", "Acme.Shapes.Square"),  # : this(1.0)
        ("Acme.Util.Format.Number", "Acme.Util.Format.Number"),  # the other overload
        ("Acme.Util.Logger.Logger", "Acme.Util.Logger.Write"),
        ("Acme.Util.Logger.Child", "Acme.Util.Logger"),
        ("Acme.Util.Logger.Shared", "Acme.Util.Logger"),
        ("Acme.Util.Tracing.Trace", "Acme.Util.Logger.Shared"),
        ("Acme.Util.Tracing.Trace", "Acme.Util.Logger.Write"),  # Shared().Write
    }


def test_csharp_inheritance_overrides_and_overloads(builder: FileStateBuilder) -> None:
    states = _states(builder)
    shapes = states["Shapes.cs"]
    names = {s.id: s.qualified_name for st in states.values() for s in st.symbols}
    local = {(e.type, names[e.src], names[e.dst]) for e in shapes.edges if e.dst in names}
    assert (EdgeType.INHERITS_FROM, "Acme.Shapes.Square", "Acme.Shapes.Shape") in local
    assert (EdgeType.INHERITS_FROM, "Acme.Shapes.Shape", "Acme.Shapes.IShape") in local
    assert (EdgeType.OVERRIDES, "Acme.Shapes.Square.Area", "Acme.Shapes.Shape.Area") in local
    assert (EdgeType.OVERRIDES, "Acme.Shapes.Shape.Area", "Acme.Shapes.IShape.Area") in local
    # ``Number(value, 3)`` inside the one-argument overload is the two-argument one.
    logger = states["Logger.cs"]
    number = [s.id for s in logger.symbols if s.qualified_name == "Acme.Util.Format.Number"]
    calls = {(e.src, e.dst) for e in logger.edges if e.type is EdgeType.CALLS}
    assert (number[0], number[1]) in calls and (number[0], number[0]) not in calls


def test_csharp_references_try_each_scope_then_each_opened_namespace() -> None:
    ref = Reference(name="Format.Number", module=f"{CS_GLOBAL}.Acme.App.Program+Acme.Util")
    assert reference_keys(SCOPE, ref, "csharp") == [
        f"{SCOPE}|{CS_GLOBAL}|Acme.App.Program.Format.Number",
        f"{SCOPE}|{CS_GLOBAL}|Acme.App.Format.Number",
        f"{SCOPE}|{CS_GLOBAL}|Acme.Format.Number",
        f"{SCOPE}|{CS_GLOBAL}|Format.Number",
        f"{SCOPE}|{CS_GLOBAL}|Acme.Util.Format.Number",
        # ``Format`` may be a property of the class (or of a base: the first opened names)
        f"{SCOPE}|{CS_GLOBAL}|Acme.App.Program.Format().Number",
        f"{SCOPE}|{CS_GLOBAL}|Acme.Util.Format().Number",
    ]


def test_dotnet_calls_and_hostile_usings_stay_bounded(builder: FileStateBuilder) -> None:
    # .NET's namespaces are never opened, and its fully written names never resolve here.
    source = b"using System;\nusing System.Linq;\nnamespace N {\nclass A {\n" \
             b"void M() { System.Console.WriteLine(); }\n}\n}\n"  # fmt: skip
    calls = [e for e in build_state(builder, "a.cs", source).edges if e.type is EdgeType.CALLS]
    assert [e.ref.module for e in calls if e.ref] == [None]  # never a key of the project's
    # Hostile: 5,000 ``using`` lines. Each reference carries at most 24 opened namespaces.
    usings = b"".join(b"using N%d.Sub;\n" % i for i in range(5000))
    state = build_state(builder, "b.cs", usings + b"class B { void M() { Run(); } }\n")
    (call,) = [e for e in state.edges if e.type is EdgeType.CALLS]
    assert call.ref is not None and len(reference_keys(SCOPE, call.ref, "csharp")) == 2 + 24


def test_broken_csharp_keeps_its_last_good_symbols(builder: FileStateBuilder) -> None:
    good = (SHAPES / "Logger.cs").read_bytes()
    before = build_state(builder, "Logger.cs", good)
    broken = good.replace(b"lines.Append(line);", b"lines.Append(line;")
    after = build_state(builder, "Logger.cs", broken, version=2, previous=before)
    assert after.flags.has_errors
    names = {s.qualified_name for s in after.symbols}
    assert {"Acme.Util.Logger.Write", "Acme.Util.Logger.Child", "Acme.Util.Format.Number"} <= names


def test_full_names_global_and_what_a_call_returns(builder: FileStateBuilder) -> None:
    states = {"Logger.cs": build_state(builder, "Logger.cs", (SHAPES / "Logger.cs").read_bytes())}
    source = b"namespace Acme.App { class P { void M() {\n" \
             b"Acme.Util.Format.Number(1.0); global::Acme.Util.Tracing.Trace();\n" \
             b"var l = Acme.Util.Logger.Shared(); l.Write(\"x\"); } } }\n"  # fmt: skip
    states["P.cs"] = build_state(builder, "P.cs", source)
    called = {callee for caller, callee in joined_callers(states, "csharp", CS_GLOBAL)
              if caller == "Acme.App.P.M"}  # fmt: skip
    assert called == {"Acme.Util.Format.Number", "Acme.Util.Tracing.Trace",
                      "Acme.Util.Logger.Shared", "Acme.Util.Logger.Write"}  # fmt: skip


def test_types_named_like_properties_and_untyped_locals(builder: FileStateBuilder) -> None:
    """Rules dnlib's misses against the compiler's IL showed (``bench/_csharp_reference``)."""
    source = b"""namespace N {
public interface IChunk { void SetOffset(); }
public class Heap : IChunk { public void SetOffset() {} public void Add() {} }
public class Heaps : System.IDisposable {
    readonly Heap heap;
    public Heap Heap { get { return heap; } }  // a property named as its type
    readonly System.Collections.Generic.List<IChunk> chunks;
    public Heaps() { heap = new Heap(); }
    public void Write() {
        heap.Add();  // the field's declared type, not the property
        var current = Heap;  // a property's value
        current.Add();
        foreach (var chunk in chunks) chunk.SetOffset();  // an element of the field
        Dispose();  // System.IDisposable is an interface: nothing to inherit from it
    }
    public void Dispose() {}
}
public class Special : Heap {}  // runs Heap's constructor, written or not
}
"""
    state = build_state(builder, "h.cs", source)
    names = {s.id: s.qualified_name for s in state.symbols}
    edges = {(e.type, names.get(e.src), names.get(e.dst, e.dst)) for e in state.edges}
    called = {dst for kind, src, dst in edges if src == "N.Heaps.Write" and kind is EdgeType.CALLS}
    assert called == {"N.Heap.Add", "N.IChunk.SetOffset", "N.Heaps.Dispose"}
    assert (EdgeType.INSTANTIATES, "N.Heaps.Heaps", "N.Heap") in edges  # the class, not Heaps.Heap
    assert (EdgeType.INSTANTIATES, "N.Special", "N.Heap") in edges
    assert (EdgeType.INSTANTIATES, "N.Heap", "N.IChunk") not in edges  # an interface's none


def test_extension_methods_by_extended_type_and_arity(builder: FileStateBuilder) -> None:
    """``reader.ReadPacked()`` runs ``IOExtensions.ReadPacked(this Reader r)`` when the
    namespace is in scope; .NET's own ``writer.Write(x)`` does not find an extension of the
    same name that takes other arguments."""
    library = b"""namespace Acme.IO {
public class Reader { public int ReadByte() => 0; }
public static class IOExtensions {
    public static int ReadPacked(this Reader reader) => reader.ReadByte();
    public static void Write(this System.IO.BinaryWriter w, Reader r, int n) {}
}
}
"""
    user = b"""using Acme.IO;
namespace Acme.App {
class Loader {
    readonly Reader reader;
    readonly System.IO.BinaryWriter writer;
    int Load() { writer.Write(1); return reader.ReadPacked(); }
    void Save(BinaryWriter w) { w.Write(reader, 2); }
}
}
"""
    states = {"IO.cs": build_state(builder, "IO.cs", library),
              "Loader.cs": build_state(builder, "Loader.cs", user)}  # fmt: skip
    found = joined_callers(states, "csharp", CS_GLOBAL)
    assert ("Acme.App.Loader.Load", "Acme.IO.IOExtensions.ReadPacked") in found
    assert ("Acme.App.Loader.Load", "Acme.IO.IOExtensions.Write") not in found  # one argument
    assert ("Acme.App.Loader.Save", "Acme.IO.IOExtensions.Write") in found  # two, after this
    extension = next(s for s in states["IO.cs"].symbols if s.name == "ReadPacked")
    assert (
        symbol_key(SCOPE, "", extension) == f"{SCOPE}|{CS_GLOBAL}|Acme.IO.this.Reader.ReadPacked/0"
    )


def test_members_of_a_base_of_another_file(builder: FileStateBuilder) -> None:
    """A nested type of the base class (``Rows<T>``) and a property of it (``Listener``)
    named from a subclass in another file."""
    base = b"""namespace W {
public interface IListener { void OnEvent(); }
public abstract class MetaData {
    public IListener Listener { get; set; }
    public class Rows<T> { public void Add(T item) {} }
}
}
"""
    derived = b"""namespace W {
sealed class Normal : MetaData {
    readonly Rows<string> names = new Rows<string>();
    void Run() { names.Add("a"); Listener.OnEvent(); }
}
}
"""
    states = {"MetaData.cs": build_state(builder, "MetaData.cs", base),
              "Normal.cs": build_state(builder, "Normal.cs", derived)}  # fmt: skip
    called = {callee for caller, callee in joined_callers(states, "csharp", CS_GLOBAL)
              if caller == "W.Normal.Run"}  # fmt: skip
    assert called == {"W.MetaData.Rows.Add", "W.IListener.OnEvent"}


def test_extension_receivers_nested_usings_and_namespace_aliases(
    builder: FileStateBuilder,
) -> None:
    """dnlib's and dbus-sharp's shapes: an extension method's ``this ITypeDefFinder self`` is
    a parameter like any (``self`` is no keyword in C#); a parameter of a class of this file
    reaches another file's extension (``a.RemoveModifiers()``); a list property is a list
    too (``Items.GetSafe()``), also under ``using TS = System.Collections.Generic;``; and
    ``using Protocol;`` inside ``namespace DBus`` opens ``DBus.Protocol``."""
    files = {
        "Finder.cs": b"namespace D {\n public interface IFinder {\n"
                     b"  int Find(string name, bool reflection);\n }\n"
                     b" public static class Extensions {\n"
                     b"  public static int FindNormal(this IFinder self, string name) {\n"
                     b"   return self.Find(name, false);\n  }\n }\n}\n",
        "Sig.cs": b"namespace D {\n public abstract class Sig {\n"
                  b"  public int Size() { return 0; }\n }\n public static class SigExtensions {\n"
                  b"  public static Sig Unwrap(this Sig a) { return a.Stripped(); }\n }\n}\n",
        "Strip.cs": b"namespace D {\n public static class More {\n"
                    b"  public static Sig Stripped(this Sig s) { return s; }\n }\n}\n",
        "Safe.cs": b"using System.Collections.Generic;\nnamespace D.T {\n"
                   b" public static class Ext {\n"
                   b"  public static int GetSafe<T>(this IList<T> list) { return 0; }\n }\n}\n",
        "Holder.cs": b"using System.Collections.Generic;\nusing D.T;\n"
                     b"using TS = System.Collections.Generic;\nnamespace D {\n"
                     b" public class Holder {\n  public IList<Sig> Items { get { return null; } }\n"
                     b"  public TS.IList<Sig> Aliased { get { return null; } }\n"
                     b"  int Count() { return Items.GetSafe(); }\n"
                     b"  int CountAliased() { return Aliased.GetSafe(); }\n }\n}\n",
        "Protocol/Writer.cs": b"namespace DBus.Protocol {\n public class MessageWriter {\n"
                              b"  public void Write(int v) {}\n }\n}\n",
        "Bus.cs": b"namespace DBus {\n using Protocol;\n public class BusObject {\n"
                  b"  void Send() { MessageWriter w = new MessageWriter(); w.Write(1); }\n }\n}\n",
    }  # fmt: skip
    states = {path: build_state(builder, path, text) for path, text in files.items()}
    found = joined_callers(states, "csharp", CS_GLOBAL)
    assert {
        ("D.Extensions.FindNormal", "D.IFinder.Find"),
        ("D.SigExtensions.Unwrap", "D.More.Stripped"),
        ("D.Holder.Count", "D.T.Ext.GetSafe"),
        ("D.Holder.CountAliased", "D.T.Ext.GetSafe"),
        ("DBus.BusObject.Send", "DBus.Protocol.MessageWriter"),
        ("DBus.BusObject.Send", "DBus.Protocol.MessageWriter.Write"),
    } <= found, sorted(found)
    assert ("D.Extensions.FindNormal", "D.Extensions.Find") not in found
