"""lagless.wire: bytes and bits, with no protocol state.

The lowest protocol layer (DESIGN.md "Layers"): byte-aligned ``Buffer`` codecs, bit-packed
``BitWriter`` / ``BitReader`` / ``BitCounter`` streams with one ``serialize(stream)`` per message,
wrapping sequence arithmetic, quantisation with stated error bounds, and zero-bitmap compression.
Every reader raises only ``DecodeError`` on bad bytes. Formats: ``docs/protocol/wire.md``.

The names below are imported from their submodules on first use (`lagless._lazy`), so a layer
that needs only sequence arithmetic or ``DecodeError`` (the transport) does not import numpy,
which ``bitstream`` and ``quantize`` need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lagless._lazy import lazy_exports

if TYPE_CHECKING:
    from lagless.wire.bitstream import BitCounter as BitCounter
    from lagless.wire.bitstream import BitReader as BitReader
    from lagless.wire.bitstream import BitStream as BitStream
    from lagless.wire.bitstream import BitWriter as BitWriter
    from lagless.wire.bitstream import Serializable as Serializable
    from lagless.wire.bitstream import measure_message as measure_message
    from lagless.wire.bitstream import pack_bit_columns as pack_bit_columns
    from lagless.wire.bitstream import read_message as read_message
    from lagless.wire.bitstream import unpack_bit_columns as unpack_bit_columns
    from lagless.wire.bitstream import write_message as write_message
    from lagless.wire.buffer import VARINT_MAX_BYTES as VARINT_MAX_BYTES
    from lagless.wire.buffer import Buffer as Buffer
    from lagless.wire.buffer import varint_size as varint_size
    from lagless.wire.compress import ZERO_BITMAP_MAX_INPUT as ZERO_BITMAP_MAX_INPUT
    from lagless.wire.compress import zero_bitmap_compress as zero_bitmap_compress
    from lagless.wire.compress import zero_bitmap_compressed_size as zero_bitmap_compressed_size
    from lagless.wire.compress import zero_bitmap_decompress as zero_bitmap_decompress
    from lagless.wire.errors import DecodeError as DecodeError
    from lagless.wire.quantize import bits_for_range as bits_for_range
    from lagless.wire.quantize import dequantize as dequantize
    from lagless.wire.quantize import dequantize_angle as dequantize_angle
    from lagless.wire.quantize import dequantize_angle_array as dequantize_angle_array
    from lagless.wire.quantize import dequantize_array as dequantize_array
    from lagless.wire.quantize import (
        pack_quaternion_smallest_three as pack_quaternion_smallest_three,
    )
    from lagless.wire.quantize import (
        pack_quaternions_smallest_three as pack_quaternions_smallest_three,
    )
    from lagless.wire.quantize import quantization_steps as quantization_steps
    from lagless.wire.quantize import quantize as quantize
    from lagless.wire.quantize import quantize_angle as quantize_angle
    from lagless.wire.quantize import quantize_angle_array as quantize_angle_array
    from lagless.wire.quantize import quantize_array as quantize_array
    from lagless.wire.quantize import quaternion_error_bound as quaternion_error_bound
    from lagless.wire.quantize import (
        unpack_quaternion_smallest_three as unpack_quaternion_smallest_three,
    )
    from lagless.wire.quantize import (
        unpack_quaternions_smallest_three as unpack_quaternions_smallest_three,
    )
    from lagless.wire.seq import seq_add as seq_add
    from lagless.wire.seq import seq_diff as seq_diff
    from lagless.wire.seq import seq_greater as seq_greater
    from lagless.wire.seq import seq_less as seq_less

# where each public name lives: imported from there on first use (see the module doc)
_HOMES: dict[str, str] = {
    "VARINT_MAX_BYTES": "buffer",
    "ZERO_BITMAP_MAX_INPUT": "compress",
    "BitCounter": "bitstream",
    "BitReader": "bitstream",
    "BitStream": "bitstream",
    "BitWriter": "bitstream",
    "Buffer": "buffer",
    "DecodeError": "errors",
    "Serializable": "bitstream",
    "bits_for_range": "quantize",
    "dequantize": "quantize",
    "dequantize_angle": "quantize",
    "dequantize_angle_array": "quantize",
    "dequantize_array": "quantize",
    "measure_message": "bitstream",
    "pack_bit_columns": "bitstream",
    "pack_quaternion_smallest_three": "quantize",
    "pack_quaternions_smallest_three": "quantize",
    "quantization_steps": "quantize",
    "quantize": "quantize",
    "quantize_angle": "quantize",
    "quantize_angle_array": "quantize",
    "quantize_array": "quantize",
    "quaternion_error_bound": "quantize",
    "read_message": "bitstream",
    "seq_add": "seq",
    "seq_diff": "seq",
    "seq_greater": "seq",
    "seq_less": "seq",
    "unpack_bit_columns": "bitstream",
    "unpack_quaternion_smallest_three": "quantize",
    "unpack_quaternions_smallest_three": "quantize",
    "varint_size": "buffer",
    "write_message": "bitstream",
    "zero_bitmap_compress": "compress",
    "zero_bitmap_compressed_size": "compress",
    "zero_bitmap_decompress": "compress",
}

__all__ = [
    "VARINT_MAX_BYTES",
    "ZERO_BITMAP_MAX_INPUT",
    "BitCounter",
    "BitReader",
    "BitStream",
    "BitWriter",
    "Buffer",
    "DecodeError",
    "Serializable",
    "bits_for_range",
    "dequantize",
    "dequantize_angle",
    "dequantize_angle_array",
    "dequantize_array",
    "measure_message",
    "pack_bit_columns",
    "pack_quaternion_smallest_three",
    "pack_quaternions_smallest_three",
    "quantization_steps",
    "quantize",
    "quantize_angle",
    "quantize_angle_array",
    "quantize_array",
    "quaternion_error_bound",
    "read_message",
    "seq_add",
    "seq_diff",
    "seq_greater",
    "seq_less",
    "unpack_bit_columns",
    "unpack_quaternion_smallest_three",
    "unpack_quaternions_smallest_three",
    "varint_size",
    "write_message",
    "zero_bitmap_compress",
    "zero_bitmap_compressed_size",
    "zero_bitmap_decompress",
]


__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
