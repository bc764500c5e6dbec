"""Our method-call marshaller must produce what dbus-fast's own reader decodes identically."""

from __future__ import annotations

import io
import string

from dbus_fast import Message
from dbus_fast._private.unmarshaller import Unmarshaller
from hypothesis import given, settings
from hypothesis import strategies as st

from deskpilot.host.atspi.wire import method_call


def _decode(raw: bytes) -> Message:
    reader = Unmarshaller(io.BufferedRWPair(io.BytesIO(raw), io.BytesIO()), None)  # type: ignore[arg-type]
    msg = reader.unmarshall()
    assert msg is not None
    return msg


_path = st.lists(
    st.text(alphabet=string.ascii_letters + string.digits + "_", min_size=1, max_size=40),
    min_size=0,
    max_size=6,
).map(lambda parts: "/" + "/".join(parts))
_name = st.text(alphabet=string.ascii_letters, min_size=1, max_size=30)
_iface = st.lists(_name, min_size=2, max_size=5).map(".".join)
_dest = st.one_of(st.none(), st.integers(0, 10_000).map(lambda n: f":1.{n}"))
_arg = st.one_of(
    st.tuples(st.just("s"), st.text(max_size=300)),
    st.tuples(st.just("i"), st.integers(-(2**31), 2**31 - 1)),
    st.tuples(st.just("u"), st.integers(0, 2**32 - 1)),
)


@settings(max_examples=300, deadline=None)
@given(
    serial=st.integers(1, 2**32 - 1),
    dest=_dest,
    path=_path,
    iface=_iface,
    member=_name,
    args=st.lists(_arg, max_size=4),
)
def test_roundtrip_through_dbus_fast(
    serial: int,
    dest: str | None,
    path: str,
    iface: str,
    member: str,
    args: list[tuple[str, object]],
) -> None:
    sig = "".join(code for code, _ in args)
    body = tuple(v for _, v in args)
    raw = method_call(serial, dest, path, iface, member, sig, body)
    assert raw is not None
    msg = _decode(raw)
    assert (msg.serial, msg.destination, msg.path, msg.interface, msg.member) == (
        serial,
        dest,
        path,
        iface,
        member,
    )
    assert msg.signature == sig
    assert tuple(msg.body) == body


def test_unsupported_bodies_fall_back() -> None:
    assert method_call(1, None, "/a", "a.b", "M", "v", ("x",)) is None
    assert method_call(1, None, "/a", "a.b", "M", "(aiia{ss}iaiiasib)uib", ([],)) is None
    assert method_call(1, None, "/a", "a.b", "M", "s", (3,)) is None
    assert method_call(1, None, "/a", "a.b", "M", "ss", ("only one",)) is None
