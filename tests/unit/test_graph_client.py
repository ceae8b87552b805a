"""The graph store's client parses FalkorDB's replies in C (hiredis).

redis-py falls back to a pure-Python parser without hiredis: a context's 400-row graph walk
then spent 163 ms parsing its reply (the server ran it in 6 ms), 20 ms with hiredis."""

from redis.connection import DefaultParser
from redis.utils import HIREDIS_AVAILABLE


def test_graph_replies_are_parsed_by_hiredis() -> None:
    assert HIREDIS_AVAILABLE, "hiredis is a dependency: pip install -e ."
    assert DefaultParser.__name__ == "_HiredisParser"
