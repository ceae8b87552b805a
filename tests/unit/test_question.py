"""What a question names in code (``query.question``) and the files that define it."""

from __future__ import annotations

from patchstream.query.question import (
    MAX_DEFINERS,
    MAX_NAMES,
    file_name_index,
    named_files,
    named_in,
)

ISSUE = """Session.send fails with a KeyError when the adapter is mounted twice

```python
>>> s = requests.Session(); s.mount("http://", MyAdapter())
Traceback (most recent call last):
  File "/usr/lib/python3/site-packages/requests/sessions.py", line 701, in send
    adapter = self.get_adapter(url=request.url)
  File "/usr/lib/python3/site-packages/requests/adapters.py", line 42, in get_connection
KeyError: 'http://'
```
See also src/requests/utils.py and the retry_count setting.
"""


def test_an_issue_names_frames_paths_and_identifiers() -> None:
    named = named_in(ISSUE)
    assert named.frames == [("/usr/lib/python3/site-packages/requests/sessions.py", "send"),
                            ("/usr/lib/python3/site-packages/requests/adapters.py",
                             "get_connection")]  # fmt: skip
    assert named.paths == ["src/requests/utils.py"]
    for name in ("send", "get_connection", "Session", "get_adapter", "MyAdapter", "KeyError",
                 "retry_count"):  # fmt: skip
        assert name in named.names, name
    assert "print" not in named.names and "e.g" not in named.names
    assert not named_in("how is the area of a square computed")


def test_files_rank_frames_first_then_paths_then_definers() -> None:
    known = ["requests/sessions.py", "requests/adapters.py", "requests/utils.py",
             "requests/models.py", "tests/test_requests.py"]  # fmt: skip
    definers = {"get_adapter": ["requests/sessions.py"], "MyAdapter": [],
                "Session": ["requests/sessions.py", "requests/models.py"]}  # fmt: skip
    ranked = named_files(named_in(ISSUE), lambda ns: {n: definers.get(n, []) for n in ns},
                         file_name_index(known)).files  # fmt: skip
    # innermost frame first (a traceback prints it last), then the other, the path, definers
    assert ranked == ["requests/adapters.py", "requests/sessions.py", "requests/utils.py",
                      "requests/models.py"]  # fmt: skip


def test_names_are_bounded_whatever_the_question_holds() -> None:
    flood = " ".join(f"call_number_{i}()" for i in range(5000))
    named = named_in(flood)
    assert len(named.names) == MAX_NAMES
    unknown = named_files(named_in('File "x.py", line 1'), lambda ns: {}, {"a.py": ["a.py"]})
    assert unknown.files == []


def test_hostile_issue_text_cannot_make_the_patterns_backtrack() -> None:
    """Issue text is hostile input: "Ab" + 30 capitals + "_" took 38 s with a nested
    quantifier that could split the capitals two ways (60 would take years)."""
    runs = ["Ab" + "A" * 60 + "_", "aB" + "Ba" * 5000 + "_", "a." * 16_000, "a_" * 16_000 + "!",
            'File "' + "a" * 5000 + '", line 1', "ab." * 10_000 + "py"]  # fmt: skip
    found = [named_in(text) for text in runs]
    assert [len(f.names) for f in found] == [0, 0, 0, 0, 0, 0]
    assert [bool(f.paths) for f in found] == [False, False, False, False, False, True]


def test_files_a_question_names_itself_come_first_and_are_counted() -> None:
    from patchstream.query.question import named_files

    question = 'Traceback:\n  File "pkg/a.py", line 3, in run\nwhen HelperThing is used'
    found = named_files(named_in(question), lambda ns: {n: ["tests/t.py"] for n in ns},
                        file_name_index(["pkg/a.py", "tests/t.py"]))  # fmt: skip
    assert (found.files, found.explicit) == (["pkg/a.py", "tests/t.py"], 1)


def test_a_c_crash_names_its_frames_and_a_compiler_error_its_file() -> None:
    """Issue #56: a gdb backtrace (innermost first) and a compiler's ``path:line:col``."""
    crash = (
        "Program received signal SIGSEGV.\n"
        '#0  0x000055d4a1 in kv_get (store=0x0, key=0x55 "a") at src/kv.c:21\n'
        "#1  0x000055d4b2 in cache_lookup (store=0x0, key=...) at src/cache.c:9\n"
        "#2  main () at src/main.c:17\n"
        "and earlier: include/kv.h:11:24: error: expected ';' before 'int'\n"
    )
    named = named_in(crash)
    assert named.frames == [("src/main.c", "main"), ("src/cache.c", "cache_lookup"),
                            ("src/kv.c", "kv_get")]  # fmt: skip
    assert named.paths == ["include/kv.h"]
    assert {"kv_get", "cache_lookup"} <= set(named.names)


def test_a_ruby_backtrace_and_a_dotnet_stack_trace_name_their_frames() -> None:
    """Issue #56: the question parser reads the frames of languages it may not parse; their
    files are still found by path (plain text is searchable)."""
    ruby = ("NoMethodError: undefined method `total' for nil\n"
            "app/models/cart.rb:12:in `checkout'\n"
            "app/controllers/orders_controller.rb:7:in 'OrdersController#create'\n")  # fmt: skip
    named = named_in(ruby)
    assert named.frames == [("app/controllers/orders_controller.rb", "create"),
                            ("app/models/cart.rb", "checkout")]  # fmt: skip
    dotnet = (
        "System.NullReferenceException: Object reference not set\n"
        "   at Shop.Cart.Total(Decimal rate) in C:\\src\\Shop\\Cart.cs:line 42\n"
        "   at Shop.Program.Main(String[] args) in /home/ci/Shop/Program.cs:line 9\n"
    )
    named = named_in(dotnet)
    assert named.frames == [("home/ci/Shop/Program.cs", "Main"), ("src/Shop/Cart.cs", "Total")]
    assert "Total" in named.names
    assert named_in("see lib/shop/cart.php and Cart.kt").paths == ["lib/shop/cart.php", "Cart.kt"]
    php = ("PHP Fatal error:  Uncaught Error: Call to a member function total() on null\n"
           "#0 /var/www/src/Cart.php(42): Shop\\Cart->total()\n"
           "#1 /var/www/public/index.php(7): checkout()\n")  # fmt: skip
    assert named_in(php).frames == [("var/www/public/index.php", "checkout"),
                                    ("var/www/src/Cart.php", "total")]  # fmt: skip
    assert named_in("#0 " + "a/" * 20_000 + "x.php(1): ").frames == []
    hostile = "at " + "a." * 5000 + "b(" + "x" * 400 + ") in c.cs:line 1"
    assert named_in(hostile).frames == []
    assert named_in("a/" * 20_000 + "x.rb:1 in").frames == []  # no ``:in `m'``: no frame


def test_a_name_defined_in_too_many_files_points_at_none() -> None:
    """``__init__`` in 10k files of a monorepo says nothing of where a question belongs: it
    adds no file and no weight; a rarer name's files rank as before."""
    named = named_in("ProgressBar.__init__ breaks when render_bar is called")
    hub = {f"pkg{i}/m.py" for i in range(MAX_DEFINERS + 1)}

    def definers(names: object) -> dict[str, set[str]]:
        return {"__init__": hub, "render_bar": {"ui/bar.py", "ui/old.py"}}

    pointed = named_files(named, definers, {})
    assert set(pointed.files) == {"ui/bar.py", "ui/old.py"}
    assert pointed.weights == {"ui/bar.py": 0.5, "ui/old.py": 0.5}
    at_cap = named_files(named, lambda names: {"__init__": set(list(hub)[:MAX_DEFINERS])}, {})
    assert len(at_cap.files) == MAX_DEFINERS  # at the cap it still counts
