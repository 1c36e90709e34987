"""The C cipher of a compiled build (``lagless.transport._aead``) against libsodium and OpenSSL.

A compiled build seals packets of at most `C_AEAD_BYTES` with it (`lagless.transport.crypto`):
all of them where its vector code runs, `SMALL_AEAD_BYTES` elsewhere. Under an editable install
the module is not built, so the fixture compiles ``_aead.c`` itself: these tests run in both CI
stages and check the same source. Every test of the cipher runs three times: on that build (its
AVX-512 code on a CPU that has it), on one compiled with ``LAGLESS_AEAD_NO_AVX512`` (AVX2 at
most, as on a CPU without AVX-512) and on one compiled with ``LAGLESS_AEAD_SCALAR`` (the portable
code alone, as on a CPU without AVX2).
"""

from __future__ import annotations

import json
import platform
import struct
from pathlib import Path
from types import ModuleType

import pytest
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from hypothesis import given, settings
from hypothesis import strategies as st

from lagless.transport import crypto
from lagless.transport.crypto import C_AEAD_BYTES, C_DATA_LIMIT, SMALL_AEAD_BYTES, PacketCipher
from lagless.transport.drops import DropReason
from lagless.transport.packet import payload_associated_data, read_payload_packet
from lagless.transport.replay import ReplayWindow
from tests.transport.c_extension import SOURCES, build_extension

SOURCE = SOURCES / "_aead.c"
VECTORS = Path(__file__).resolve().parents[1] / "conformance" / "vectors" / "netcode-1.02.json"
NONCE = struct.Struct("<4xQ")


def _build(tmp: Path, *, leave_out: str | None = None) -> ModuleType:
    """Compile ``_aead.c`` into ``tmp`` as setup.py does, and import it.

    ``leave_out`` names a macro that leaves vector code out: ``LAGLESS_AEAD_NO_AVX512`` (the
    AVX-512 code) or ``LAGLESS_AEAD_SCALAR`` (all of it).
    """
    return build_extension(tmp, "_aead", SOURCE, [(leave_out, "1")] if leave_out else None)


def _installed_or_built(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    """The installed ``lagless.transport._aead`` of a compiled build, or one built from source."""
    try:
        from lagless.transport import _aead
    except ImportError:
        return _build(tmp_path_factory.mktemp("aead"))
    return _aead


@pytest.fixture(scope="module", params=["as built", "no AVX-512", "portable"])
def aead(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    """The cipher as a build gives it, then without its AVX-512 code, then its portable code."""
    if request.param == "portable":
        module = _build(tmp_path_factory.mktemp("aead-scalar"), leave_out="LAGLESS_AEAD_SCALAR")
        assert module.VECTORIZED is False
        assert module.AVX512 is False
        return module
    if request.param == "no AVX-512":
        module = _build(tmp_path_factory.mktemp("aead-avx2"), leave_out="LAGLESS_AEAD_NO_AVX512")
        assert module.AVX512 is False
        return module
    return _installed_or_built(tmp_path_factory)


def _reference(key: bytes, sequence: int, plaintext: bytes, aad: bytes | None) -> bytes:
    return ChaCha20Poly1305(key).encrypt(NONCE.pack(sequence), plaintext, aad)


def _encrypted_vectors() -> list[tuple[str, bytes, int, bytes, bytes]]:
    """``(id, key, sequence, associated data, sealed body)`` of every encrypted packet vector."""
    doc = json.loads(VECTORS.read_text())
    found = []
    for vector in doc["vectors"]:
        cases = vector.get("cases") or [vector.get("intermediate", {})]
        for n, case in enumerate(cases):
            if "associated_data" not in case or vector["id"] == "connect_token_private":
                continue
            inputs = vector["inputs"]
            nonce = bytes.fromhex(case["nonce"])
            assert nonce[:4] == bytes(4)
            sequence = int.from_bytes(nonce[4:], "little")
            packet = bytes.fromhex(case.get("packet") or vector["expected"]["packet"])
            body = packet[1 + case["sequence_bytes"] :]
            name = f"{vector['id']}[{n}]"
            key = bytes.fromhex(inputs["key"])
            found.append((name, key, sequence, bytes.fromhex(case["associated_data"]), body))
    return found


ENCRYPTED = _encrypted_vectors()


def test_the_vectors_cover_every_sequence_width() -> None:
    assert len(ENCRYPTED) >= 25
    assert {len(body) for *_, body in ENCRYPTED} >= {16 + 8, 16 + 1200}


@pytest.mark.parametrize(
    ("name", "key", "sequence", "aad", "sealed"), ENCRYPTED, ids=[row[0] for row in ENCRYPTED]
)
def test_reference_packets_open_and_seal_again(
    aead: ModuleType, name: str, key: bytes, sequence: int, aad: bytes, sealed: bytes
) -> None:
    """Packets sealed by the netcode reference (libsodium) open, and seal back to the same bytes."""
    plaintext = aead.open(key, sequence, sealed, aad)
    assert plaintext is not None, name
    assert aead.seal(key, sequence, plaintext, aad) == sealed


@settings(max_examples=400, deadline=None)
@given(
    key=st.binary(min_size=32, max_size=32),
    sequence=st.integers(0, 2**64 - 1),
    plaintext=st.binary(max_size=1300),
    aad=st.none() | st.binary(max_size=80),
)
def test_seal_matches_openssl_and_opens(
    aead: ModuleType, key: bytes, sequence: int, plaintext: bytes, aad: bytes | None
) -> None:
    sealed = aead.seal(key, sequence, plaintext, aad)
    assert sealed == _reference(key, sequence, plaintext, aad)
    assert aead.open(key, sequence, sealed, aad) == plaintext


@settings(max_examples=300, deadline=None)
@given(
    key=st.binary(min_size=32, max_size=32),
    sequence=st.integers(0, 2**64 - 1),
    plaintext=st.binary(max_size=300),
    aad=st.binary(max_size=40),
    data=st.data(),
)
def test_any_flipped_bit_or_other_context_fails(
    aead: ModuleType,
    key: bytes,
    sequence: int,
    plaintext: bytes,
    aad: bytes,
    data: st.DataObject,
) -> None:
    sealed = aead.seal(key, sequence, plaintext, aad)
    bit = data.draw(st.integers(0, 8 * len(sealed) - 1))
    flipped = bytearray(sealed)
    flipped[bit // 8] ^= 1 << (bit % 8)
    assert aead.open(key, sequence, bytes(flipped), aad) is None
    assert aead.open(key, sequence ^ 1, sealed, aad) is None
    assert aead.open(key, sequence, sealed, aad + b"\0") is None
    assert (
        aead.open(
            bytes(31) + b"\1" if key != bytes(31) + b"\1" else bytes(32), sequence, sealed, aad
        )
        is None
    )


@pytest.mark.parametrize(
    "size", [0, 1, 15, 16, 17, 63, 64, 65, 112, 127, 128, 129, 191, 192, 256, 257, 1024, 1200]
)
def test_the_poly1305_reduction_edges(aead: ModuleType, size: int) -> None:
    """All-ones inputs drive the accumulator to its largest values before the final reduction."""
    for key in (b"\xff" * 32, bytes(32)):
        for sequence in (0, 2**32 - 1, 2**64 - 1):
            plaintext, aad = b"\xff" * size, b"\xff" * 16
            assert aead.seal(key, sequence, plaintext, aad) == _reference(
                key, sequence, plaintext, aad
            )


@pytest.mark.parametrize("aad_size", [0, 1, 15, 16, 17, 22, 31, 32, 33, 80, 127, 128, 129])
def test_every_count_of_blocks_in_one_tag(aead: ModuleType, aad_size: int) -> None:
    """The AVX-512 tag runs the associated data, ciphertext and lengths as one stream of blocks,
    with zero blocks put first to fill the first run of eight: every count of them (0 to 7),
    with the associated data alone in the first run, spilling into the next one, or absent."""
    key = bytes(range(1, 33))
    aad = bytes(range(aad_size))
    for size in range(200, 330):
        plaintext = bytes((7 * i) & 0xFF for i in range(size))
        sealed = aead.seal(key, size, plaintext, aad)
        assert sealed == _reference(key, size, plaintext, aad), (aad_size, size)
        assert aead.open(key, size, sealed, aad) == plaintext


@pytest.mark.parametrize("sealed", [b"", b"\0", bytes(15)])
def test_shorter_than_a_tag_is_none(aead: ModuleType, sealed: bytes) -> None:
    assert aead.open(bytes(32), 0, sealed, None) is None


def test_buffers_other_than_bytes(aead: ModuleType) -> None:
    key, plaintext, aad = bytes(range(32)), b"hello world", b"ad"
    sealed = aead.seal(key, 9, memoryview(plaintext), bytearray(aad))
    assert sealed == _reference(key, 9, plaintext, aad)
    assert aead.open(key, 9, memoryview(sealed)[0:], aad) == plaintext


@pytest.mark.parametrize(
    ("args", "error", "text"),
    [
        ((bytes(31), 0, b"", None), ValueError, "key must be 32 bytes"),
        ((bytearray(32), 0, b"", None), ValueError, "key must be 32 bytes"),
        ((bytes(32), -1, b"", None), OverflowError, "negative"),
        ((bytes(32), 2**64, b"", None), OverflowError, "too big"),
        ((bytes(32), 1.0, b"", None), TypeError, "sequence must be an int"),
        ((bytes(32), 0, "text", None), TypeError, "data must be a bytes-like object"),
        ((bytes(32), 0, b"", 5), TypeError, "aad must be a bytes-like object"),
        ((bytes(32), 0, b""), TypeError, "takes 4 or 5 arguments"),
        ((bytes(32), 0, b"", None, 0, 0), TypeError, "takes 4 or 5 arguments"),
    ],
)
def test_wrong_arguments_raise_clearly(
    aead: ModuleType, args: tuple[object, ...], error: type[Exception], text: str
) -> None:
    for fn in (aead.seal, aead.open):
        with pytest.raises(error, match=text):
            fn(*args)


@given(
    plaintext=st.binary(max_size=1300),
    prefix=st.binary(max_size=12),
    junk=st.binary(max_size=12),
    aad=st.none() | st.binary(max_size=40),
)
@settings(max_examples=60, deadline=None)
def test_a_prefix_is_written_first_and_an_offset_is_read_in_place(
    aead: ModuleType, plaintext: bytes, prefix: bytes, junk: bytes, aad: bytes | None
) -> None:
    """seal(..., prefix) is prefix + seal(...); open(..., offset) is open(data[offset:])."""
    key = bytes(range(3, 35))
    sealed = aead.seal(key, 77, plaintext, aad)
    assert aead.seal(key, 77, plaintext, aad, prefix) == prefix + sealed
    assert aead.seal(key, 77, plaintext, aad, None) == sealed
    framed = junk + sealed
    assert aead.open(key, 77, framed, aad, len(junk)) == plaintext
    assert aead.open(key, 77, bytearray(framed), aad, len(junk)) == plaintext
    assert aead.open(key, 77, framed, aad, len(junk) + 1) is None  # one byte of tag too few
    assert aead.open(key, 77, framed, aad, len(framed)) is None


@pytest.mark.parametrize("offset", [-1, 25, 2**70, 1.0, "1"])
def test_an_offset_outside_the_data_raises_clearly(aead: ModuleType, offset: object) -> None:
    framed = bytes(8) + aead.seal(bytes(32), 1, b"", None)  # 8 bytes, then the 16-byte tag
    assert aead.open(bytes(32), 1, framed, None, 8) == b""
    with pytest.raises(ValueError, match=r"offset must be an int in \[0, len\(sealed\)\]"):
        aead.open(bytes(32), 1, framed, None, offset)


def test_packet_cipher_prefix_and_offset_match_either_way() -> None:
    """PacketCipher's prefix and offset give the same bytes through cryptography."""
    cipher = PacketCipher(bytes(range(32)))
    cipher.small = None
    sealed = cipher.encrypt(5, b"payload", b"ad")
    assert cipher.encrypt(5, b"payload", b"ad", b"\x01\x05") == b"\x01\x05" + sealed
    assert cipher.decrypt(5, b"\x01\x05" + sealed, b"ad", 2) == b"payload"
    assert cipher.decrypt(5, b"\x01\x05" + sealed, b"ad", 3) is None


@pytest.mark.parametrize(
    "size", [1, SMALL_AEAD_BYTES - 1, SMALL_AEAD_BYTES, SMALL_AEAD_BYTES + 1, 1200]
)
def test_packet_cipher_gives_the_same_bytes_either_way(aead: ModuleType, size: int) -> None:
    """Around the size threshold the two ciphers interoperate in both directions."""
    small = PacketCipher(bytes(range(32)))
    small.small = (aead.seal, aead.open)
    plain = PacketCipher(bytes(range(32)))
    plain.small = None
    payload, aad = bytes(range(256)) * (size // 256) + bytes(size % 256), b"associated"
    sealed = small.encrypt(77, payload, aad)
    assert sealed == plain.encrypt(77, payload, aad)
    assert plain.decrypt(77, sealed, aad) == payload
    assert small.decrypt(77, sealed, aad) == payload
    assert small.decrypt(78, sealed, aad) is None


@pytest.mark.parametrize("size", [32, SMALL_AEAD_BYTES, SMALL_AEAD_BYTES + 1])
def test_payload_hot_path_through_the_small_cipher(aead: ModuleType, size: int) -> None:
    """`read_payload_packet` opens with the small cipher and drops a forged packet the same way."""
    associated = payload_associated_data(0x1122334455667788)
    cipher = PacketCipher(bytes(range(32)))
    cipher.small = (aead.seal, aead.open)
    payload = bytes(size)
    sealed = cipher.encrypt(1000, payload, associated[2])
    wire = bytes([(2 << 4) | 5]) + (1000).to_bytes(2, "little") + sealed
    assert read_payload_packet(wire, cipher, ReplayWindow(), associated) == payload
    forged = wire[:-1] + bytes([wire[-1] ^ 1])
    assert read_payload_packet(forged, cipher, ReplayWindow(), associated) == (
        DropReason.DECRYPT_FAILED
    )


def test_a_compiled_build_uses_it() -> None:
    """A compiled core seals packets in C; a pure one leaves everything to cryptography."""
    from lagless.transport import compiled

    assert (crypto.SMALL_AEAD is not None) == compiled()
    assert (PacketCipher(bytes(32)).small is not None) == compiled()
    assert (C_AEAD_BYTES > 0) == compiled()


def _cpu_flags() -> set[str]:
    """The first CPU's feature flags in ``/proc/cpuinfo`` (empty where there is none)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return set()


def test_the_vector_code_runs_where_the_cpu_has_it(tmp_path: Path) -> None:
    """Built as setup.py builds it, the module runs AVX2 exactly on x86-64 CPUs that have it, and
    its AVX-512 code exactly on those that also have AVX-512 F and BW."""
    module = _build(tmp_path)
    flags = _cpu_flags() if platform.machine() in ("x86_64", "AMD64") else set()
    assert module.VECTORIZED is ("avx2" in flags)
    assert module.AVX512 is ({"avx2", "avx512f", "avx512bw"} <= flags)


# every length where the vector code changes how it cuts the data: ChaCha20 passes of 4 and 16
# blocks (64 bytes each; the first pass also makes the Poly1305 key, block 0) and Poly1305 runs
# of 4 and 8 blocks (16 bytes each, from 8 and 16 blocks on)
PASS_EDGES = sorted(
    {
        edge + delta
        for edge in (64, 128, 192, 256, 448, 512, 960, 1024, 1088, 1984, 2048, 3008)
        for delta in (-1, 0, 1)
    }
    | {n * 16 + delta for n in (7, 8, 15, 16, 23, 24) for delta in (-1, 0, 1)}
)


@pytest.mark.parametrize("size", PASS_EDGES)
def test_every_pass_boundary_matches_openssl(aead: ModuleType, size: int) -> None:
    """Seal and open at every length where a pass or a run starts or ends, with and without
    associated data, against OpenSSL; a flipped last byte fails."""
    key = bytes(range(100, 132))
    plaintext = bytes((7 * i + size) & 0xFF for i in range(size))
    for aad in (b"", b"associated data of 29 bytes!!"):
        sealed = aead.seal(key, size, plaintext, aad)
        assert sealed == _reference(key, size, plaintext, aad)
        assert aead.open(key, size, sealed, aad) == plaintext
        assert aead.open(key, size, sealed[:-1] + bytes([sealed[-1] ^ 1]), aad) is None


def test_every_packet_goes_through_c_with_the_vector_code() -> None:
    """With AVX2 the C cipher takes packets of every size; without, up to SMALL_AEAD_BYTES."""
    try:
        from lagless.transport import _aead
    except ImportError:
        assert C_AEAD_BYTES == 0
        return
    assert (C_DATA_LIMIT if _aead.VECTORIZED else SMALL_AEAD_BYTES) == C_AEAD_BYTES
