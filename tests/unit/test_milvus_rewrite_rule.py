"""When a start rewrites a Milvus Lite collection: a long delete log against a small store,
never a big store whose copy would cost more than the log it removes."""

from patchstream.embedded.milvus_rewrite import needs_rewrite


def test_a_long_log_over_few_rows_is_rewritten() -> None:
    assert needs_rewrite(3_978, 2_044)  # the restart soak's chunks after 58 rounds
    assert not needs_rewrite(200, 50)  # under the bound: half a second of a start


def test_a_big_collection_waits_until_its_log_costs_what_the_copy_does() -> None:
    assert not needs_rewrite(5_000, 42_000)  # scipy's chunk rows: a copy of ~40 s
    assert needs_rewrite(10_501, 42_000)


def test_a_bound_of_zero_turns_it_off() -> None:
    assert not needs_rewrite(100_000, 10, bound=0)
