/*
 * ChaCha20-Poly1305-IETF (RFC 8439 section 2.8) for netcode packets, with the nonce built from
 * the packet sequence (netcode 1.02 spec section 6.3: 4 zero bytes, then uint64 LE sequence).
 *
 * Why this exists: see docs/compiled.md, "A C AEAD for every packet". The library call through
 * `cryptography` costs about 40 microseconds the first time it runs after the process slept (its
 * code spans many pages), which is most of a 60 Hz round trip's excess over raw UDP; warm, it
 * spends more on setting up OpenSSL's context per call than on the cipher for packets of any
 * size. This file is a few kilobytes of straight-line code: portable C for every CPU; on x86-64
 * CPUs with AVX2, four ChaCha20 blocks and four Poly1305 blocks at a time; with AVX-512 (F and
 * BW) as well, sixteen ChaCha20 blocks and eight Poly1305 blocks at a time, the tag's whole input
 * (associated data, ciphertext, lengths) in runs of eight with none left to scalar code (1100
 * bytes sealed in 0.90 microseconds with AVX-512 before that last step, 1.40 with AVX2 alone,
 * against cryptography's 2.40 on the 2-core VM; docs/compiled.md). The code is chosen once, at
 * import, from what the CPU reports.
 * It is built only with the compiled core; `lagless.transport.crypto` falls back to `cryptography`
 * without it, and the tests check three builds (as built, without AVX-512, portable only)
 * against RFC 8439's vectors, the netcode reference's packets and OpenSSL.
 *
 * Python API (module lagless.transport._aead):
 *   seal(key: bytes, sequence: int, plaintext: bytes, aad: bytes, prefix: bytes = None) -> bytes
 *       prefix || ciphertext || tag, in one buffer (a packet's header needs no second copy)
 *   open(key: bytes, sequence: int, sealed: bytes, aad: bytes, offset: int = 0) -> bytes | None
 *       the plaintext of sealed[offset:], read in place (no slice of the datagram)
 * `open` returns None when the tag does not verify (or what follows `offset` is shorter than a
 * tag), never raising on bad input; both raise TypeError/ValueError/OverflowError on wrong
 * argument types, a key that is not 32 bytes, a sequence outside [0, 2^64), an offset outside
 * the data or data beyond the 32-bit block counter (2^38 - 64 bytes). Neither releases the
 * GIL: a packet takes a microsecond or two.
 *   VECTORIZED: bool   whether this build runs vector code (AVX2 at least) on this CPU
 *   AVX512: bool       whether it runs the AVX-512 code (LAGLESS_AEAD_NO_AVX512 leaves it out)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(LAGLESS_AEAD_SCALAR)
/* The vector code (AVX2, and AVX-512 F and BW), compiled for those instruction sets whatever the
 * build's flags and used only where the CPU has them (checked once, at import; the module's
 * VECTORIZED and AVX512 tell). LAGLESS_AEAD_SCALAR leaves all of it out, LAGLESS_AEAD_NO_AVX512
 * the AVX-512 part (the tests build all three). */
#define HAVE_AVX2_PATH 1
#include <immintrin.h>
static int have_avx2;
static int have_avx512;
#define AVX2 __attribute__((target("avx2")))
#define AVX512 __attribute__((target("avx512f,avx512bw")))
#endif

#define KEY_BYTES 32
#define TAG_BYTES 16
#define BLOCK_BYTES 64
/* from eight blocks on, one AVX-512 pass of sixteen blocks costs less than passes of four */
#define AVX512_MIN_BYTES 512
#define MAX_DATA_BYTES (((uint64_t)1 << 38) - 64) /* the 32-bit block counter's reach */

static inline uint32_t load32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline void store32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static inline uint32_t rotl(uint32_t v, int n) { return (v << n) | (v >> (32 - n)); }

#define QUARTER(a, b, c, d)                                                                        \
    do {                                                                                           \
        a += b; d = rotl(d ^ a, 16);                                                               \
        c += d; b = rotl(b ^ c, 12);                                                               \
        a += b; d = rotl(d ^ a, 8);                                                                \
        c += d; b = rotl(b ^ c, 7);                                                                \
    } while (0)

/* The ChaCha20 state for one key and nonce; word 12 is the block counter. */
typedef struct {
    uint32_t w[16];
} chacha_state;

static void chacha_init(chacha_state *s, const uint8_t *key, uint64_t sequence) {
    s->w[0] = 0x61707865u; /* "expand 32-byte k" */
    s->w[1] = 0x3320646eu;
    s->w[2] = 0x79622d32u;
    s->w[3] = 0x6b206574u;
    for (int i = 0; i < 8; i++) {
        s->w[4 + i] = load32(key + 4 * i);
    }
    s->w[12] = 0;
    s->w[13] = 0; /* the nonce's 4 zero bytes */
    s->w[14] = (uint32_t)sequence;
    s->w[15] = (uint32_t)(sequence >> 32);
}

/* One 64-byte keystream block at the state's counter; the counter then moves on by one. */
static void chacha_block(chacha_state *s, uint8_t out[BLOCK_BYTES]) {
    uint32_t x[16];
    memcpy(x, s->w, sizeof x);
    for (int i = 0; i < 10; i++) {
        QUARTER(x[0], x[4], x[8], x[12]);
        QUARTER(x[1], x[5], x[9], x[13]);
        QUARTER(x[2], x[6], x[10], x[14]);
        QUARTER(x[3], x[7], x[11], x[15]);
        QUARTER(x[0], x[5], x[10], x[15]);
        QUARTER(x[1], x[6], x[11], x[12]);
        QUARTER(x[2], x[7], x[8], x[13]);
        QUARTER(x[3], x[4], x[9], x[14]);
    }
    for (int i = 0; i < 16; i++) {
        store32(out + 4 * i, x[i] + s->w[i]);
    }
    s->w[12]++;
}

/* out = in ^ stream over n bytes, eight at a time. */
static inline void xor_into(uint8_t *out, const uint8_t *in, const uint8_t *stream, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t a, b;
        memcpy(&a, in + i, 8);
        memcpy(&b, stream + i, 8);
        a ^= b;
        memcpy(out + i, &a, 8);
    }
    for (; i < n; i++) {
        out[i] = in[i] ^ stream[i];
    }
}

#ifdef HAVE_AVX2_PATH
/* Rotate every 32-bit word left by n (a constant): one byte shuffle for 16 and 8, two shifts
 * and an OR otherwise (AVX2 has no rotate). */
AVX2 static inline __m256i rotl256(__m256i v, int n) {
    if (n == 16) {
        return _mm256_shuffle_epi8(v, _mm256_setr_epi8(2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14,
                                                       15, 12, 13, 2, 3, 0, 1, 6, 7, 4, 5, 10,
                                                       11, 8, 9, 14, 15, 12, 13));
    }
    if (n == 8) {
        return _mm256_shuffle_epi8(v, _mm256_setr_epi8(3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15,
                                                       12, 13, 14, 3, 0, 1, 2, 7, 4, 5, 6, 11, 8,
                                                       9, 10, 15, 12, 13, 14));
    }
    return _mm256_or_si256(_mm256_slli_epi32(v, n), _mm256_srli_epi32(v, 32 - n));
}

/* One ChaCha20 quarter round on a, b, c, d with a vector width's add, xor and rotate: on word
 * registers (one word of many blocks each), or on row registers (one row of a block per 128-bit
 * lane: every column at once, and every diagonal after DIAGONALIZE). */
#define VEC_QUARTER(add, xor, rotl, a, b, c, d)                                                   \
    do {                                                                                           \
        a = add(a, b); d = rotl(xor(d, a), 16);                                                    \
        c = add(c, d); b = rotl(xor(b, c), 12);                                                    \
        a = add(a, b); d = rotl(xor(d, a), 8);                                                     \
        c = add(c, d); b = rotl(xor(b, c), 7);                                                     \
    } while (0)

/* Rotate rows b, c, d of every 128-bit lane by one, two and three words, so that the columns
 * become the diagonals; UNDIAGONALIZE turns them back. */
#define DIAGONALIZE(shuffle, b, c, d)                                                              \
    do {                                                                                           \
        b = shuffle(b, 0x39);                                                                      \
        c = shuffle(c, 0x4e);                                                                      \
        d = shuffle(d, 0x93);                                                                      \
    } while (0)
#define UNDIAGONALIZE(shuffle, b, c, d)                                                            \
    do {                                                                                           \
        b = shuffle(b, 0x93);                                                                      \
        c = shuffle(c, 0x4e);                                                                      \
        d = shuffle(d, 0x39);                                                                      \
    } while (0)

#define QUARTER256(a, b, c, d) VEC_QUARTER(_mm256_add_epi32, _mm256_xor_si256, rotl256, a, b, c, d)

/* XOR n bytes of `in` into `out` with the four keystream blocks at counters w[12] .. w[12] + 3;
 * the counter then moves on by four. With `block0`, the first block goes there instead (the
 * Poly1305 key) and n <= 192, else n <= 256. Two sets of four rows, each row register holding one
 * row of two blocks, so the state stays in registers and each block's 64 bytes come out in order
 * (no transposition). */
AVX2 static void chacha_xor4(chacha_state *s, const uint8_t *in, uint8_t *out, size_t n,
                             uint8_t *block0) {
    const __m256i a0 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)&s->w[0]));
    const __m256i b0 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)&s->w[4]));
    const __m256i c0 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)&s->w[8]));
    const __m256i d0 = _mm256_add_epi32(
        _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)&s->w[12])),
        _mm256_setr_epi32(0, 0, 0, 0, 1, 0, 0, 0));
    const __m256i d1 = _mm256_add_epi32(d0, _mm256_setr_epi32(2, 0, 0, 0, 2, 0, 0, 0));
    __m256i a = a0, b = b0, c = c0, d = d0;
    __m256i e = a0, f = b0, g = c0, h = d1;
    for (int i = 0; i < 10; i++) {
        QUARTER256(a, b, c, d);
        QUARTER256(e, f, g, h);
        DIAGONALIZE(_mm256_shuffle_epi32, b, c, d);
        DIAGONALIZE(_mm256_shuffle_epi32, f, g, h);
        QUARTER256(a, b, c, d);
        QUARTER256(e, f, g, h);
        UNDIAGONALIZE(_mm256_shuffle_epi32, b, c, d);
        UNDIAGONALIZE(_mm256_shuffle_epi32, f, g, h);
    }
    a = _mm256_add_epi32(a, a0); b = _mm256_add_epi32(b, b0);
    c = _mm256_add_epi32(c, c0); d = _mm256_add_epi32(d, d0);
    e = _mm256_add_epi32(e, a0); f = _mm256_add_epi32(f, b0);
    g = _mm256_add_epi32(g, c0); h = _mm256_add_epi32(h, d1);
    __m256i stream[8] = {
        _mm256_permute2x128_si256(a, b, 0x20), _mm256_permute2x128_si256(c, d, 0x20),
        _mm256_permute2x128_si256(a, b, 0x31), _mm256_permute2x128_si256(c, d, 0x31),
        _mm256_permute2x128_si256(e, f, 0x20), _mm256_permute2x128_si256(g, h, 0x20),
        _mm256_permute2x128_si256(e, f, 0x31), _mm256_permute2x128_si256(g, h, 0x31),
    };
    if (block0 == NULL && n == sizeof stream) {
        for (int i = 0; i < 8; i++) {
            __m256i m = _mm256_loadu_si256((const __m256i *)(in + 32 * i));
            _mm256_storeu_si256((__m256i *)(out + 32 * i), _mm256_xor_si256(m, stream[i]));
        }
    } else {
        uint8_t bytes[sizeof stream];
        memcpy(bytes, stream, sizeof stream);
        size_t skip = 0;
        if (block0 != NULL) {
            memcpy(block0, bytes, BLOCK_BYTES);
            skip = BLOCK_BYTES;
        }
        xor_into(out, in, bytes + skip, n);
    }
    s->w[12] += 4;
}

#define ROTL512(v, n) _mm512_rol_epi32(v, n)
#define SHUFFLE512(v, imm) _mm512_shuffle_epi32(v, (_MM_PERM_ENUM)(imm))
#define QUARTER512(a, b, c, d) VEC_QUARTER(_mm512_add_epi32, _mm512_xor_si512, ROTL512, a, b, c, d)

/* Four registers whose 128-bit lane j holds quarter q of block j (q = 0..3, one register per
 * quarter) into four registers holding one whole block each, in place. */
AVX512 static inline void blocks_from_quarters(__m512i q[4]) {
    __m512i u0 = _mm512_shuffle_i32x4(q[0], q[1], 0x44), u1 = _mm512_shuffle_i32x4(q[0], q[1], 0xee);
    __m512i u2 = _mm512_shuffle_i32x4(q[2], q[3], 0x44), u3 = _mm512_shuffle_i32x4(q[2], q[3], 0xee);
    q[0] = _mm512_shuffle_i32x4(u0, u2, 0x88);
    q[1] = _mm512_shuffle_i32x4(u0, u2, 0xdd);
    q[2] = _mm512_shuffle_i32x4(u1, u3, 0x88);
    q[3] = _mm512_shuffle_i32x4(u1, u3, 0xdd);
}

/* XOR n bytes of `in` into `out` with `count` keystream blocks; with `block0`, block[0] goes
 * there instead and the data takes the blocks after it. The last block may be partial (masked). */
AVX512 static inline void xor_blocks512(const __m512i *block, int count, const uint8_t *in,
                                        uint8_t *out, size_t n, uint8_t *block0) {
    int j = 0;
    if (block0 != NULL) {
        _mm512_storeu_si512((void *)block0, block[0]);
        j = 1;
    }
    for (; n > 0 && j < count; j++) {
        size_t step = n < BLOCK_BYTES ? n : BLOCK_BYTES;
        __mmask64 keep = step == BLOCK_BYTES ? ~(__mmask64)0 : ((__mmask64)1 << step) - 1;
        __m512i m = _mm512_maskz_loadu_epi8(keep, in);
        _mm512_mask_storeu_epi8(out, keep, _mm512_xor_si512(m, block[j]));
        in += step;
        out += step;
        n -= step;
    }
}

/* chacha_xor4 with AVX-512: the four blocks' rows in four registers, one block per 128-bit lane,
 * and a one-instruction rotate. */
AVX512 static void chacha_xor4_512(chacha_state *s, const uint8_t *in, uint8_t *out, size_t n,
                                   uint8_t *block0) {
    __m512i o[4];
    for (int r = 0; r < 4; r++) {
        o[r] = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)&s->w[4 * r]));
    }
    o[3] = _mm512_add_epi32(o[3], _mm512_setr_epi32(0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0));
    __m512i a = o[0], b = o[1], c = o[2], d = o[3];
    for (int i = 0; i < 10; i++) {
        QUARTER512(a, b, c, d);
        DIAGONALIZE(SHUFFLE512, b, c, d);
        QUARTER512(a, b, c, d);
        UNDIAGONALIZE(SHUFFLE512, b, c, d);
    }
    __m512i block[4] = {_mm512_add_epi32(a, o[0]), _mm512_add_epi32(b, o[1]),
                        _mm512_add_epi32(c, o[2]), _mm512_add_epi32(d, o[3])};
    blocks_from_quarters(block);
    xor_blocks512(block, 4, in, out, n, block0);
    s->w[12] += 4;
}

/* Words 4g .. 4g + 3 of every block from the four word registers a, b, c, d: y[k]'s 128-bit
 * lane L then holds them for block 4L + k (a 4 x 4 transposition inside each lane). */
AVX512 static inline void words_to_quarters(__m512i a, __m512i b, __m512i c, __m512i d,
                                            __m512i y[4]) {
    __m512i t0 = _mm512_unpacklo_epi32(a, b), t1 = _mm512_unpackhi_epi32(a, b);
    __m512i t2 = _mm512_unpacklo_epi32(c, d), t3 = _mm512_unpackhi_epi32(c, d);
    y[0] = _mm512_unpacklo_epi64(t0, t2);
    y[1] = _mm512_unpackhi_epi64(t0, t2);
    y[2] = _mm512_unpacklo_epi64(t1, t3);
    y[3] = _mm512_unpackhi_epi64(t1, t3);
}

/* XOR n bytes of `in` into `out` with the sixteen keystream blocks at counters w[12] ..
 * w[12] + 15; the counter then moves on by sixteen. With `block0`, the first block goes there
 * instead (the Poly1305 key) and n <= 960, else n <= 1024. Sixteen registers hold one state word
 * of all sixteen blocks each (AVX-512 has 32 registers, so nothing spills), four independent
 * quarter rounds at a time; a transposition then gives each block its own register. */
AVX512 static void chacha_xor16(chacha_state *s, const uint8_t *in, uint8_t *out, size_t n,
                                uint8_t *block0) {
    __m512i o[16];
    for (int i = 0; i < 16; i++) {
        o[i] = _mm512_set1_epi32((int)s->w[i]);
    }
    o[12] = _mm512_add_epi32(o[12], _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
                                                      13, 14, 15));
    __m512i x0 = o[0], x1 = o[1], x2 = o[2], x3 = o[3], x4 = o[4], x5 = o[5], x6 = o[6],
            x7 = o[7], x8 = o[8], x9 = o[9], x10 = o[10], x11 = o[11], x12 = o[12], x13 = o[13],
            x14 = o[14], x15 = o[15];
    for (int i = 0; i < 10; i++) {
        QUARTER512(x0, x4, x8, x12);
        QUARTER512(x1, x5, x9, x13);
        QUARTER512(x2, x6, x10, x14);
        QUARTER512(x3, x7, x11, x15);
        QUARTER512(x0, x5, x10, x15);
        QUARTER512(x1, x6, x11, x12);
        QUARTER512(x2, x7, x8, x13);
        QUARTER512(x3, x4, x9, x14);
    }
    __m512i y[4][4]; /* y[g][k]: words 4g .. 4g + 3 of blocks 4L + k, in lane L */
    words_to_quarters(_mm512_add_epi32(x0, o[0]), _mm512_add_epi32(x1, o[1]),
                      _mm512_add_epi32(x2, o[2]), _mm512_add_epi32(x3, o[3]), y[0]);
    words_to_quarters(_mm512_add_epi32(x4, o[4]), _mm512_add_epi32(x5, o[5]),
                      _mm512_add_epi32(x6, o[6]), _mm512_add_epi32(x7, o[7]), y[1]);
    words_to_quarters(_mm512_add_epi32(x8, o[8]), _mm512_add_epi32(x9, o[9]),
                      _mm512_add_epi32(x10, o[10]), _mm512_add_epi32(x11, o[11]), y[2]);
    words_to_quarters(_mm512_add_epi32(x12, o[12]), _mm512_add_epi32(x13, o[13]),
                      _mm512_add_epi32(x14, o[14]), _mm512_add_epi32(x15, o[15]), y[3]);
    __m512i block[16];
    for (int k = 0; k < 4; k++) {
        __m512i q[4] = {y[0][k], y[1][k], y[2][k], y[3][k]};
        blocks_from_quarters(q); /* q[L] is block 4L + k */
        for (int lane = 0; lane < 4; lane++) {
            block[4 * lane + k] = q[lane];
        }
    }
    xor_blocks512(block, 16, in, out, n, block0);
    s->w[12] += 16;
}
#endif

/* XOR `len` bytes of `in` with the keystream into `out` (they may be the same buffer). */
static void chacha_xor(chacha_state *s, const uint8_t *in, uint8_t *out, size_t len) {
#ifdef HAVE_AVX2_PATH
    if (have_avx512) {
        while (len >= AVX512_MIN_BYTES) {
            size_t n = len < 16 * BLOCK_BYTES ? len : 16 * BLOCK_BYTES;
            chacha_xor16(s, in, out, n, NULL);
            in += n;
            out += n;
            len -= n;
        }
        while (len > 0) {
            size_t n = len < 4 * BLOCK_BYTES ? len : 4 * BLOCK_BYTES;
            chacha_xor4_512(s, in, out, n, NULL);
            in += n;
            out += n;
            len -= n;
        }
        return;
    }
    if (have_avx2) {
        while (len > BLOCK_BYTES) { /* four blocks in AVX2 cost about one scalar one */
            size_t n = len < 4 * BLOCK_BYTES ? len : 4 * BLOCK_BYTES;
            chacha_xor4(s, in, out, n, NULL);
            in += n;
            out += n;
            len -= n;
        }
    }
#endif
    uint8_t stream[BLOCK_BYTES];
    while (len > 0) {
        size_t n = len < BLOCK_BYTES ? len : BLOCK_BYTES;
        chacha_block(s, stream);
        xor_into(out, in, stream, n);
        in += n;
        out += n;
        len -= n;
    }
}

/* The Poly1305 key (keystream block 0) into `block0`, then `len` bytes of `in` XORed with blocks
 * 1, 2, ... into `out`; `s` is at counter 0. The vector code makes block 0 in the same pass as
 * the first data blocks instead of one more scalar block. */
static void chacha_key_and_xor(chacha_state *s, const uint8_t *in, uint8_t *out, size_t len,
                               uint8_t block0[BLOCK_BYTES]) {
#ifdef HAVE_AVX2_PATH
    size_t n = 0;
    if (have_avx512 && len + BLOCK_BYTES >= AVX512_MIN_BYTES) {
        n = len < 15 * BLOCK_BYTES ? len : 15 * BLOCK_BYTES;
        chacha_xor16(s, in, out, n, block0);
    } else if (have_avx512) {
        n = len < 3 * BLOCK_BYTES ? len : 3 * BLOCK_BYTES;
        chacha_xor4_512(s, in, out, n, block0);
    } else if (have_avx2) {
        n = len < 3 * BLOCK_BYTES ? len : 3 * BLOCK_BYTES;
        chacha_xor4(s, in, out, n, block0);
    }
    if (have_avx2) {
        chacha_xor(s, in + n, out + n, len - n);
        return;
    }
#endif
    chacha_block(s, block0);
    chacha_xor(s, in, out, len);
}

/* Poly1305 with five 26-bit limbs; every block fed here is a full 16 bytes (RFC 8439 2.8 pads
 * the associated data and the ciphertext to 16 bytes, so the 2^128 bit is always set). */
typedef struct {
    uint32_t r[5];
    uint32_t s[4]; /* r[1..4] * 5 */
    uint32_t h[5];
    uint32_t pad[4];
} poly_state;

static void poly_init(poly_state *p, const uint8_t key[32]) {
    const uint32_t mask = 0x3ffffff;
    p->r[0] = load32(key + 0) & mask;
    p->r[1] = (load32(key + 3) >> 2) & 0x3ffff03;
    p->r[2] = (load32(key + 6) >> 4) & 0x3ffc0ff;
    p->r[3] = (load32(key + 9) >> 6) & 0x3f03fff;
    p->r[4] = (load32(key + 12) >> 8) & 0x00fffff;
    for (int i = 0; i < 4; i++) {
        p->s[i] = p->r[i + 1] * 5;
        p->pad[i] = load32(key + 16 + 4 * i);
    }
    memset(p->h, 0, sizeof p->h);
}

/* out = a * r mod 2^130 - 5 with s = r[1..4] * 5; limbs below 2^26 but out[1] (below
 * 2^26 + 2^11). `out` may be `a`. */
static inline void poly_mul(const uint32_t a[5], const uint32_t r[5], const uint32_t s[4],
                            uint32_t out[5]) {
    const uint64_t mask = 0x3ffffff;
    const uint64_t r0 = r[0], r1 = r[1], r2 = r[2], r3 = r[3], r4 = r[4];
    const uint64_t s1 = s[0], s2 = s[1], s3 = s[2], s4 = s[3];
    const uint64_t a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3], a4 = a[4];
    uint64_t d0 = a0 * r0 + a1 * s4 + a2 * s3 + a3 * s2 + a4 * s1;
    uint64_t d1 = a0 * r1 + a1 * r0 + a2 * s4 + a3 * s3 + a4 * s2;
    uint64_t d2 = a0 * r2 + a1 * r1 + a2 * r0 + a3 * s4 + a4 * s3;
    uint64_t d3 = a0 * r3 + a1 * r2 + a2 * r1 + a3 * r0 + a4 * s4;
    uint64_t d4 = a0 * r4 + a1 * r3 + a2 * r2 + a3 * r1 + a4 * r0;
    uint64_t c;
    c = d0 >> 26; d0 &= mask; d1 += c;
    c = d1 >> 26; d1 &= mask; d2 += c;
    c = d2 >> 26; d2 &= mask; d3 += c;
    c = d3 >> 26; d3 &= mask; d4 += c;
    c = d4 >> 26; d4 &= mask;
    d0 += c * 5; /* c < 2^36: 64-bit */
    c = d0 >> 26; d0 &= mask; d1 += c;
    out[0] = (uint32_t)d0; out[1] = (uint32_t)d1; out[2] = (uint32_t)d2;
    out[3] = (uint32_t)d3; out[4] = (uint32_t)d4;
}

static void poly_blocks_scalar(poly_state *p, const uint8_t *m, size_t blocks) {
    const uint32_t mask = 0x3ffffff;
    uint32_t h[5];
    memcpy(h, p->h, sizeof h);
    while (blocks-- > 0) {
        h[0] += load32(m + 0) & mask;
        h[1] += (load32(m + 3) >> 2) & mask;
        h[2] += (load32(m + 6) >> 4) & mask;
        h[3] += (load32(m + 9) >> 6) & mask;
        h[4] += (load32(m + 12) >> 8) | (1u << 24);
        poly_mul(h, p->r, p->s, h);
        m += 16;
    }
    memcpy(p->h, h, sizeof h);
}

#ifdef HAVE_AVX2_PATH
/* h = (h + m) * k per 64-bit lane, with s = 5 k, for a vector width's multiply (32 x 32 -> 64
 * bits), add, shifts and AND; limbs end below 2^26 but h[1] (below 2^26 + 2^11). */
#define POLY_STEP(mul, add, shr, shl, and, mask, h, m, k, s)                                      \
    do {                                                                                           \
        __typeof__(h[0]) a_[5], d_[5], c_;                                                         \
        for (int i_ = 0; i_ < 5; i_++) {                                                           \
            a_[i_] = add(h[i_], m[i_]);                                                            \
        }                                                                                          \
        d_[0] = add(add(add(mul(a_[0], k[0]), mul(a_[1], s[4])),                                   \
                        add(mul(a_[2], s[3]), mul(a_[3], s[2]))), mul(a_[4], s[1]));               \
        d_[1] = add(add(add(mul(a_[0], k[1]), mul(a_[1], k[0])),                                   \
                        add(mul(a_[2], s[4]), mul(a_[3], s[3]))), mul(a_[4], s[2]));               \
        d_[2] = add(add(add(mul(a_[0], k[2]), mul(a_[1], k[1])),                                   \
                        add(mul(a_[2], k[0]), mul(a_[3], s[4]))), mul(a_[4], s[3]));               \
        d_[3] = add(add(add(mul(a_[0], k[3]), mul(a_[1], k[2])),                                   \
                        add(mul(a_[2], k[1]), mul(a_[3], k[0]))), mul(a_[4], s[4]));               \
        d_[4] = add(add(add(mul(a_[0], k[4]), mul(a_[1], k[3])),                                   \
                        add(mul(a_[2], k[2]), mul(a_[3], k[1]))), mul(a_[4], k[0]));               \
        for (int i_ = 0; i_ < 4; i_++) {                                                           \
            c_ = shr(d_[i_], 26); d_[i_] = and(d_[i_], mask); d_[i_ + 1] = add(d_[i_ + 1], c_);    \
        }                                                                                          \
        c_ = shr(d_[4], 26); d_[4] = and(d_[4], mask);                                             \
        d_[0] = add(d_[0], add(shl(c_, 2), c_)); /* + 5 c */                                       \
        c_ = shr(d_[0], 26); d_[0] = and(d_[0], mask); d_[1] = add(d_[1], c_);                     \
        for (int i_ = 0; i_ < 5; i_++) {                                                           \
            h[i_] = d_[i_];                                                                        \
        }                                                                                          \
    } while (0)

/* pw[i] = r^(i + 1) for i < count. */
static void poly_powers(const poly_state *p, uint32_t pw[][5], int count) {
    memcpy(pw[0], p->r, sizeof pw[0]);
    for (int i = 1; i < count; i++) {
        poly_mul(pw[i - 1], p->r, p->s, pw[i]);
    }
}

/* Set h to the sum of the lanes' accumulators (each limb sum below 2^30: no overflow). */
static void poly_set_sum(poly_state *p, uint64_t sum[5]) {
    uint64_t c;
    for (int i = 0; i < 4; i++) {
        c = sum[i] >> 26; sum[i] &= 0x3ffffff; sum[i + 1] += c;
    }
    c = sum[4] >> 26; sum[4] &= 0x3ffffff; sum[0] += c * 5;
    c = sum[0] >> 26; sum[0] &= 0x3ffffff; sum[1] += c;
    for (int i = 0; i < 5; i++) {
        p->h[i] = (uint32_t)sum[i];
    }
}

/* The five 26-bit limbs of four consecutive blocks, block j in 64-bit lane j. */
AVX2 static inline void poly_load4(const uint8_t *m, __m256i limbs[5]) {
    uint64_t l[5][4];
    for (int j = 0; j < 4; j++) {
        uint64_t t0 = (uint64_t)load32(m + 16 * j) | ((uint64_t)load32(m + 16 * j + 4) << 32);
        uint64_t t1 = (uint64_t)load32(m + 16 * j + 8) | ((uint64_t)load32(m + 16 * j + 12) << 32);
        l[0][j] = t0 & 0x3ffffff;
        l[1][j] = (t0 >> 26) & 0x3ffffff;
        l[2][j] = ((t0 >> 52) | (t1 << 12)) & 0x3ffffff;
        l[3][j] = (t1 >> 14) & 0x3ffffff;
        l[4][j] = (t1 >> 40) | (1u << 24);
    }
    for (int i = 0; i < 5; i++) {
        limbs[i] = _mm256_loadu_si256((const __m256i *)l[i]);
    }
}

AVX2 static inline void poly_step4(__m256i h[5], const __m256i m[5], const __m256i k[5],
                                   const __m256i s[5]) {
    const __m256i mask = _mm256_set1_epi64x(0x3ffffff);
    POLY_STEP(_mm256_mul_epu32, _mm256_add_epi64, _mm256_srli_epi64, _mm256_slli_epi64,
              _mm256_and_si256, mask, h, m, k, s);
}

/* Horner's rule four blocks at a time over `groups` runs of four blocks (>= 1): lane j takes
 * blocks 4g + j and is multiplied by r^4 after each, but after the last run by r^(4 - j), so
 * the lanes' sum is the scalar rule's h r^4g + m0 r^4g + m1 r^(4g-1) + ... (RFC 8439 2.5). */
AVX2 static void poly_blocks4(poly_state *p, const uint8_t *m, size_t groups) {
    uint32_t pw[4][5]; /* r, r^2, r^3, r^4 */
    poly_powers(p, pw, 4);
    __m256i k4[5], s4[5], last[5], slast[5], h[5], msg[5];
    for (int i = 0; i < 5; i++) {
        k4[i] = _mm256_set1_epi64x(pw[3][i]);
        last[i] = _mm256_setr_epi64x(pw[3][i], pw[2][i], pw[1][i], pw[0][i]);
        s4[i] = _mm256_add_epi64(_mm256_slli_epi64(k4[i], 2), k4[i]);
        slast[i] = _mm256_add_epi64(_mm256_slli_epi64(last[i], 2), last[i]);
        h[i] = _mm256_setr_epi64x(p->h[i], 0, 0, 0);
    }
    for (size_t g = 0; g + 1 < groups; g++, m += 64) {
        poly_load4(m, msg);
        poly_step4(h, msg, k4, s4);
    }
    poly_load4(m, msg);
    poly_step4(h, msg, last, slast);
    uint64_t sum[5];
    for (int i = 0; i < 5; i++) {
        uint64_t lanes[4];
        _mm256_storeu_si256((__m256i *)lanes, h[i]);
        sum[i] = lanes[0] + lanes[1] + lanes[2] + lanes[3];
    }
    poly_set_sum(p, sum);
}

/* The five 26-bit limbs of eight consecutive blocks, block j in 64-bit lane j, all in vector
 * registers: the blocks' low and high halves are gathered from two loads, then cut. `hibit`
 * holds each lane's 2^128 bit (1 << 24 in the top limb), or 0 for a block that stands for
 * nothing (see poly_aead8). */
AVX512 static inline void poly_load8(const uint8_t *m, __m512i hibit, __m512i limbs[5]) {
    const __m512i mask = _mm512_set1_epi64(0x3ffffff);
    __m512i x = _mm512_loadu_si512((const void *)m), y = _mm512_loadu_si512((const void *)(m + 64));
    __m512i lo = _mm512_permutex2var_epi64(x, _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14), y);
    __m512i hi = _mm512_permutex2var_epi64(x, _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15), y);
    limbs[0] = _mm512_and_si512(lo, mask);
    limbs[1] = _mm512_and_si512(_mm512_srli_epi64(lo, 26), mask);
    limbs[2] = _mm512_and_si512(_mm512_or_si512(_mm512_srli_epi64(lo, 52),
                                                _mm512_slli_epi64(hi, 12)), mask);
    limbs[3] = _mm512_and_si512(_mm512_srli_epi64(hi, 14), mask);
    limbs[4] = _mm512_or_si512(_mm512_srli_epi64(hi, 40), hibit);
}

AVX512 static inline void poly_step8(__m512i h[5], const __m512i m[5], const __m512i k[5],
                                     const __m512i s[5]) {
    const __m512i mask = _mm512_set1_epi64(0x3ffffff);
    POLY_STEP(_mm512_mul_epu32, _mm512_add_epi64, _mm512_srli_epi64, _mm512_slli_epi64,
              _mm512_and_si512, mask, h, m, k, s);
}

/* Block `j` of RFC 8439 2.8's Poly1305 input into `out`: the associated data's `a` blocks,
 * then the ciphertext's `c`, each zero-padded, then the two lengths (`lengths`). */
static void poly_aead_block(uint8_t out[16], size_t j, const uint8_t *aad, size_t aad_len,
                            size_t a, const uint8_t *ct, size_t ct_len, size_t c,
                            const uint8_t lengths[16]) {
    const uint8_t *from = lengths;
    size_t len = 16;
    if (j < a) {
        from = aad + 16 * j;
        len = aad_len - 16 * j;
    } else if (j < a + c) {
        from = ct + 16 * (j - a);
        len = ct_len - 16 * (j - a);
    }
    len = len < 16 ? len : 16;
    memcpy(out, from, len);
    memset(out + len, 0, 16 - len);
}

/* The whole Poly1305 input of RFC 8439 2.8 (associated data, ciphertext, lengths) eight blocks
 * at a time, none left to the scalar code: z zero blocks go first, as many as make the count a
 * multiple of eight, without the 2^128 bit. They are worth 0, and Horner's rule from h = 0
 * (`p` fresh from poly_init) adds nothing for them. Lane j is multiplied by r^8 after each run
 * and by r^(8 - j) after the last, as in poly_blocks4. A run of eight whole ciphertext blocks is
 * read in place; the first runs and the last one are gathered. */
AVX512 static void poly_aead8(poly_state *p, const uint8_t *aad, size_t aad_len,
                              const uint8_t *ct, size_t ct_len, const uint8_t lengths[16]) {
    const size_t a = (aad_len + 15) / 16, c = (ct_len + 15) / 16, whole = ct_len / 16;
    const size_t z = (8 - (a + c + 1) % 8) % 8, groups = (z + a + c + 1) / 8;
    uint32_t pw[8][5]; /* r .. r^8 */
    poly_powers(p, pw, 8);
    __m512i k8[5], s8[5], last[5], slast[5], h[5], msg[5];
    for (int i = 0; i < 5; i++) {
        k8[i] = _mm512_set1_epi64(pw[7][i]);
        last[i] = _mm512_setr_epi64(pw[7][i], pw[6][i], pw[5][i], pw[4][i], pw[3][i], pw[2][i],
                                    pw[1][i], pw[0][i]);
        s8[i] = _mm512_add_epi64(_mm512_slli_epi64(k8[i], 2), k8[i]);
        slast[i] = _mm512_add_epi64(_mm512_slli_epi64(last[i], 2), last[i]);
        h[i] = _mm512_setzero_si512();
    }
    const __m512i hibit = _mm512_set1_epi64(1 << 24);
    uint8_t gathered[128];
    for (size_t g = 0; g < groups; g++) {
        const size_t first = 8 * g; /* lane 0's block, counting the z zero blocks */
        const uint8_t *run = gathered;
        __m512i bits = hibit;
        if (first >= z + a && first + 8 <= z + a + whole) {
            run = ct + 16 * (first - z - a);
        } else {
            for (size_t lane = 0; lane < 8; lane++) {
                if (first + lane < z) {
                    memset(gathered + 16 * lane, 0, 16);
                } else {
                    poly_aead_block(gathered + 16 * lane, first + lane - z, aad, aad_len, a, ct,
                                    ct_len, c, lengths);
                }
            }
            if (first < z) { /* only the first run holds zero blocks (z < 8) */
                bits = _mm512_maskz_mov_epi64((__mmask8)(0xffu << z), hibit);
            }
        }
        poly_load8(run, bits, msg);
        if (g + 1 < groups) {
            poly_step8(h, msg, k8, s8);
        } else {
            poly_step8(h, msg, last, slast);
        }
    }
    uint64_t sum[5];
    for (int i = 0; i < 5; i++) {
        sum[i] = (uint64_t)_mm512_reduce_add_epi64(h[i]);
    }
    poly_set_sum(p, sum);
}
#endif

/* Feed `blocks` full 16-byte blocks: runs of four (AVX2) where they pay. With AVX-512 a tag
 * of 16 blocks or more goes through poly_aead8 instead (aead_tag); a shorter one comes here. */
static void poly_blocks(poly_state *p, const uint8_t *m, size_t blocks) {
#ifdef HAVE_AVX2_PATH
    if (have_avx2 && blocks >= 8) {
        size_t groups = blocks / 4;
        poly_blocks4(p, m, groups);
        m += 64 * groups;
        blocks -= 4 * groups;
    }
#endif
    poly_blocks_scalar(p, m, blocks);
}

/* Feed `len` bytes, zero-padded to a multiple of 16. */
static void poly_padded(poly_state *p, const uint8_t *m, size_t len) {
    size_t full = len / 16;
    poly_blocks(p, m, full);
    size_t rest = len % 16;
    if (rest) {
        uint8_t last[16] = {0};
        memcpy(last, m + 16 * full, rest);
        poly_blocks(p, last, 1);
    }
}

static void poly_finish(poly_state *p, uint8_t tag[TAG_BYTES]) {
    const uint32_t mask = 0x3ffffff;
    uint32_t h0 = p->h[0], h1 = p->h[1], h2 = p->h[2], h3 = p->h[3], h4 = p->h[4], c;
    c = h1 >> 26; h1 &= mask; h2 += c;
    c = h2 >> 26; h2 &= mask; h3 += c;
    c = h3 >> 26; h3 &= mask; h4 += c;
    c = h4 >> 26; h4 &= mask; h0 += c * 5;
    c = h0 >> 26; h0 &= mask; h1 += c;
    /* g = h + 5 - 2^130; keep g when it does not borrow, i.e. when h >= p (constant time) */
    uint32_t g0 = h0 + 5; c = g0 >> 26; g0 &= mask;
    uint32_t g1 = h1 + c; c = g1 >> 26; g1 &= mask;
    uint32_t g2 = h2 + c; c = g2 >> 26; g2 &= mask;
    uint32_t g3 = h3 + c; c = g3 >> 26; g3 &= mask;
    uint32_t g4 = h4 + c - (1u << 26);
    uint32_t keep_g = (g4 >> 31) - 1; /* all ones when g4 did not go negative */
    h0 = (h0 & ~keep_g) | (g0 & keep_g);
    h1 = (h1 & ~keep_g) | (g1 & keep_g);
    h2 = (h2 & ~keep_g) | (g2 & keep_g);
    h3 = (h3 & ~keep_g) | (g3 & keep_g);
    h4 = (h4 & ~keep_g) | (g4 & keep_g);
    /* h mod 2^128 as four 32-bit words, plus the pad */
    uint64_t f;
    f = (uint64_t)(h0 | (h1 << 26)) + p->pad[0];
    store32(tag + 0, (uint32_t)f);
    f = (uint64_t)((h1 >> 6) | (h2 << 20)) + p->pad[1] + (f >> 32);
    store32(tag + 4, (uint32_t)f);
    f = (uint64_t)((h2 >> 12) | (h3 << 14)) + p->pad[2] + (f >> 32);
    store32(tag + 8, (uint32_t)f);
    f = (uint64_t)((h3 >> 18) | (h4 << 8)) + p->pad[3] + (f >> 32);
    store32(tag + 12, (uint32_t)f);
}

/* The tag of RFC 8439 2.8 over `aad` and `ct`, keyed with keystream block 0 (`block0`). */
static void aead_tag(const uint8_t block0[BLOCK_BYTES], const uint8_t *aad, size_t aad_len,
                     const uint8_t *ct, size_t ct_len, uint8_t tag[TAG_BYTES]) {
    poly_state p;
    poly_init(&p, block0);
    uint8_t lengths[16];
    store32(lengths + 0, (uint32_t)aad_len);
    store32(lengths + 4, (uint32_t)((uint64_t)aad_len >> 32));
    store32(lengths + 8, (uint32_t)ct_len);
    store32(lengths + 12, (uint32_t)((uint64_t)ct_len >> 32));
#ifdef HAVE_AVX2_PATH
    if (have_avx512 && (aad_len + 15) / 16 + (ct_len + 15) / 16 + 1 >= 16) {
        poly_aead8(&p, aad, aad_len, ct, ct_len, lengths);
        poly_finish(&p, tag);
        return;
    }
#endif
    poly_padded(&p, aad, aad_len);
    poly_padded(&p, ct, ct_len);
    poly_blocks(&p, lengths, 1);
    poly_finish(&p, tag);
}

/* Borrowed bytes of a bytes object or any contiguous buffer; release with release_view. */
typedef struct {
    const uint8_t *data;
    Py_ssize_t len;
    Py_buffer view;
    int has_view;
} bytes_arg;

static int get_bytes(PyObject *obj, bytes_arg *arg, const char *name) {
    arg->has_view = 0;
    if (PyBytes_CheckExact(obj)) {
        arg->data = (const uint8_t *)PyBytes_AS_STRING(obj);
        arg->len = PyBytes_GET_SIZE(obj);
        return 0;
    }
    if (PyObject_GetBuffer(obj, &arg->view, PyBUF_SIMPLE) < 0) {
        PyErr_Format(PyExc_TypeError, "%s must be a bytes-like object, got %.80s", name,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    arg->has_view = 1;
    arg->data = (const uint8_t *)arg->view.buf;
    arg->len = arg->view.len;
    return 0;
}

static void release_view(bytes_arg *arg) {
    if (arg->has_view) {
        PyBuffer_Release(&arg->view);
        arg->has_view = 0;
    }
}

/* Parse (key, sequence, data, aad[, extra]) where `extra` names the optional fifth argument;
 * on success the caller releases data and aad. */
static int parse_args(PyObject *const *args, Py_ssize_t nargs, const char *fn, const char *extra,
                      const uint8_t **key, uint64_t *sequence, bytes_arg *data, bytes_arg *aad) {
    if (nargs != 4 && nargs != 5) {
        PyErr_Format(PyExc_TypeError,
                     "%s() takes 4 or 5 arguments (key, sequence, data, aad[, %s]), got %zd", fn,
                     extra, nargs);
        return -1;
    }
    if (!PyBytes_CheckExact(args[0]) || PyBytes_GET_SIZE(args[0]) != KEY_BYTES) {
        PyErr_Format(PyExc_ValueError, "%s(): key must be %d bytes", fn, KEY_BYTES);
        return -1;
    }
    *key = (const uint8_t *)PyBytes_AS_STRING(args[0]);
    if (!PyLong_Check(args[1])) {
        PyErr_Format(PyExc_TypeError, "%s(): sequence must be an int", fn);
        return -1;
    }
    *sequence = PyLong_AsUnsignedLongLong(args[1]);
    if (*sequence == (uint64_t)-1 && PyErr_Occurred()) {
        return -1;
    }
    if (get_bytes(args[2], data, "data") < 0) {
        return -1;
    }
    if ((uint64_t)data->len > MAX_DATA_BYTES) {
        PyErr_Format(PyExc_ValueError, "%s(): data above RFC 8439's limit of 2^38 - 64 bytes", fn);
        release_view(data);
        return -1;
    }
    if (args[3] == Py_None) {
        aad->has_view = 0;
        aad->data = (const uint8_t *)"";
        aad->len = 0;
    } else if (get_bytes(args[3], aad, "aad") < 0) {
        release_view(data);
        return -1;
    }
    return 0;
}

static PyObject *aead_seal(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    const uint8_t *key;
    uint64_t sequence;
    bytes_arg data, aad, prefix = {(const uint8_t *)"", 0, {0}, 0};
    if (parse_args(args, nargs, "seal", "prefix", &key, &sequence, &data, &aad) < 0) {
        return NULL;
    }
    if (nargs == 5 && args[4] != Py_None && get_bytes(args[4], &prefix, "prefix") < 0) {
        release_view(&data);
        release_view(&aad);
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, prefix.len + data.len + TAG_BYTES);
    if (out != NULL) {
        memcpy(PyBytes_AS_STRING(out), prefix.data, (size_t)prefix.len);
        uint8_t *ct = (uint8_t *)PyBytes_AS_STRING(out) + prefix.len;
        chacha_state s;
        uint8_t block0[BLOCK_BYTES];
        chacha_init(&s, key, sequence);
        chacha_key_and_xor(&s, data.data, ct, (size_t)data.len, block0);
        aead_tag(block0, aad.data, (size_t)aad.len, ct, (size_t)data.len, ct + data.len);
    }
    release_view(&data);
    release_view(&aad);
    release_view(&prefix);
    return out;
}

static PyObject *aead_open(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    const uint8_t *key;
    uint64_t sequence;
    bytes_arg data, aad;
    if (parse_args(args, nargs, "open", "offset", &key, &sequence, &data, &aad) < 0) {
        return NULL;
    }
    PyObject *out = NULL;
    if (nargs == 5) { /* open data[offset:] */
        Py_ssize_t offset = PyLong_Check(args[4]) ? PyLong_AsSsize_t(args[4]) : -1;
        if (offset < 0 || offset > data.len) {
            if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_OverflowError)) {
                PyErr_Clear();
                PyErr_Format(PyExc_ValueError,
                             "open(): offset must be an int in [0, len(sealed)] = [0, %zd]",
                             data.len);
            }
            goto done;
        }
        data.data += offset;
        data.len -= offset;
    }
    if (data.len < TAG_BYTES) {
        out = Py_None;
        Py_INCREF(out);
        goto done;
    }
    size_t ct_len = (size_t)data.len - TAG_BYTES;
    out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)ct_len);
    if (out == NULL) {
        goto done;
    }
    /* decrypted before the tag is checked (one pass makes the Poly1305 key and the plaintext),
     * but handed out only after */
    chacha_state s;
    uint8_t block0[BLOCK_BYTES], tag[TAG_BYTES];
    chacha_init(&s, key, sequence);
    chacha_key_and_xor(&s, data.data, (uint8_t *)PyBytes_AS_STRING(out), ct_len, block0);
    aead_tag(block0, aad.data, (size_t)aad.len, data.data, ct_len, tag);
    uint8_t diff = 0;
    for (int i = 0; i < TAG_BYTES; i++) {
        diff |= tag[i] ^ data.data[ct_len + i];
    }
    if (diff != 0) {
        Py_DECREF(out);
        out = Py_None;
        Py_INCREF(out);
    }
done:
    release_view(&data);
    release_view(&aad);
    return out;
}

static PyMethodDef aead_methods[] = {
    {"seal", (PyCFunction)(void (*)(void))aead_seal, METH_FASTCALL,
     "seal(key, sequence, plaintext, aad, prefix=None) -> prefix || ciphertext || 16-byte tag"},
    {"open", (PyCFunction)(void (*)(void))aead_open, METH_FASTCALL,
     "open(key, sequence, sealed, aad, offset=0) -> the plaintext of sealed[offset:], or None "
     "when the tag does not verify"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef aead_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "lagless.transport._aead",
    .m_doc = "ChaCha20-Poly1305-IETF with netcode's sequence nonces (RFC 8439 section 2.8).",
    .m_size = -1,
    .m_methods = aead_methods,
};

PyMODINIT_FUNC PyInit__aead(void) {
    int vectorized = 0, wide = 0;
#ifdef HAVE_AVX2_PATH
    __builtin_cpu_init();
    have_avx2 = __builtin_cpu_supports("avx2");
#ifndef LAGLESS_AEAD_NO_AVX512
    have_avx512 = have_avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
#endif
    vectorized = have_avx2;
    wide = have_avx512;
#endif
    PyObject *module = PyModule_Create(&aead_module);
    if (module != NULL &&
        (PyModule_AddObjectRef(module, "VECTORIZED", vectorized ? Py_True : Py_False) < 0 ||
         PyModule_AddObjectRef(module, "AVX512", wide ? Py_True : Py_False) < 0)) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
