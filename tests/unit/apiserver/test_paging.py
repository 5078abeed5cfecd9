"""LIST pages (services/apiserver/paging.py): limit, the continue token, keys in order."""

from __future__ import annotations

import pytest

from services.apiserver import errors
from services.apiserver.paging import JoinedKeys, Listing, continue_token, page, parse_continue


def pod(namespace: str, name: str, app: str = "web") -> dict[str, object]:
    return {"metadata": {"namespace": namespace, "name": name, "labels": {"app": app}}}


def test_pages_follow_etcd_key_order_and_decode_only_what_they_look_at() -> None:
    objects = [pod("a", "x"), pod("a-b", "y"), pod("a", "w"), pod("b", "z")]
    looked: list[int] = []
    listing = Listing.of(objects)
    counted = Listing(listing.keys, lambda i: looked.append(i) or listing.fetch(i))
    assert list(listing.keys) == ["a-b/y", "a/w", "a/x", "b/z"]  # "/registry/pods/<ns>/<name>"
    first = page(counted, lambda o: True, 2, "")
    assert [o["metadata"]["name"] for o in first.items] == ["y", "w"]  # type: ignore[index]
    assert (first.last, first.remaining, looked) == ("a/w", 2, [0, 1])
    rest = page(counted, lambda o: True, 2, first.last or "")
    assert [o["metadata"]["name"] for o in rest.items] == ["x", "z"]  # type: ignore[index]
    assert (rest.last, rest.remaining) == (None, 0)


def test_joined_keys_page_as_the_objects_own_keys_do() -> None:
    objects = [pod("a", "x"), pod("a-b", "y"), pod("a", "w"), pod("b", "z")]
    pairs = sorted(
        ((str(o["metadata"]["namespace"]), str(o["metadata"]["name"])) for o in objects),  # type: ignore[index]
        key=lambda k: f"{k[0]}/{k[1]}",
    )
    by_pair = {(o["metadata"]["namespace"], o["metadata"]["name"]): o for o in objects}  # type: ignore[index]
    joined = Listing(JoinedKeys(pairs), lambda i: by_pair[pairs[i]])
    assert list(joined.keys) == list(Listing.of(objects).keys) == ["a-b/y", "a/w", "a/x", "b/z"]
    assert joined.keys[1:3] == ["a/w", "a/x"]
    first = page(joined, lambda o: True, 3, "")
    rest = page(joined, lambda o: True, 3, first.last or "")
    names = [o["metadata"]["name"] for o in [*first.items, *rest.items]]  # type: ignore[index]
    assert (names, first.last, rest.last) == (["y", "w", "x", "z"], "a/x", None)


def test_a_page_of_matches_may_be_short_and_no_limit_is_everything() -> None:
    listing = Listing.of([pod("a", "1", "db"), pod("a", "2"), pod("a", "3", "db")])
    dbs = page(listing, lambda o: o["metadata"]["labels"]["app"] == "db", 1, "")  # type: ignore[index]
    assert [o["metadata"]["name"] for o in dbs.items] == ["1"] and dbs.last == "a/1"  # type: ignore[index]
    assert len(page(listing, lambda o: True, None, "").items) == 3


def test_the_token_round_trips_and_a_bad_one_is_a_400() -> None:
    assert parse_continue(continue_token("1234", "team/web-7")) == ("1234", "team/web-7")
    for bad in ("nope", continue_token("1", "x").replace("e", "f")):
        with pytest.raises(errors.ApiError) as refused:
            parse_continue(bad)
        assert refused.value.status.code == 400
        assert refused.value.status.message.startswith("invalid continue token")
