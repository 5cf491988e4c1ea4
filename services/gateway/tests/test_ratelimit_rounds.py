"""How coalesced rate-limit takes are split into statements (pure logic; the statements themselves run
against PostgreSQL in tests/e2e/test_limits.py and test_identity.py)."""

import uuid

from cairn_gateway.ratelimit import rounds


def test_each_statement_names_a_bucket_once_and_in_bucket_order() -> None:
    a, b, c = sorted(uuid.uuid4() for _ in range(3))
    takes = [(c, None), (a, None), (c, None), (b, None), (c, None), (a, None)]
    split = rounds(takes)
    assert split == [[1, 3, 0], [5, 2], [4]]
    for indexes in split:
        buckets = [takes[i][0] for i in indexes]
        assert buckets == sorted(set(buckets))
    assert sorted(i for indexes in split for i in indexes) == list(range(len(takes)))


def test_a_repeated_bucket_keeps_its_takes_in_arrival_order() -> None:
    key = uuid.uuid4()
    assert rounds([(key, None)] * 3) == [[0], [1], [2]]
    assert rounds([]) == []
