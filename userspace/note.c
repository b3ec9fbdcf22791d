// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Ed25519 keys and signed notes, byte-compatible with Go's golang.org/x/mod/sumdb/note and the
 * C2SP signed-note and tlog-checkpoint specifications, on OpenSSL 3's EVP interface.
 *
 * Where Go is lenient this module is strict, because a verifier that accepts several spellings
 * of one thing gives an editor room to work in:
 *   - base64 must be canonical (padding present, unused bits zero); Go ignores those bits;
 *   - a key hash is exactly 8 lowercase hex digits (what Go's GenerateKey writes);
 *   - every signature line by the verifier's key must verify, where Go checks only the first and
 *     drops repeats unchecked;
 *   - key names may not contain control characters (C0, DEL, C1) as well as Go's Unicode spaces
 *     and '+', and the names we create or accept as keys are at most NOTE_NAME_MAX bytes.
 * Every note Go's Sign produces with a valid key opens here, and every note this module signs
 * opens with Go's Open.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "note.h"

#define ALG_ED25519 0x01
#define ED25519_KEY_SIZE 32
#define ED25519_SIG_SIZE 64
/* alg byte || 32 key bytes */
#define KEY_ENC_SIZE (1 + ED25519_KEY_SIZE)
/* key hash || Ed25519 signature */
#define SIG_ENC_SIZE (4 + ED25519_SIG_SIZE)
#define B64_LEN(n) (((n) + 2) / 3 * 4)
/* Go's Open gives up on notes with more signatures than this (note.go, "numSig > 100"). */
#define NOTE_MAX_SIGS 100

/* "— ": U+2014 EM DASH in UTF-8, then a space. */
static const char sig_prefix[] = "\xe2\x80\x94 ";
#define SIG_PREFIX_LEN (sizeof(sig_prefix) - 1)

struct note_signer {
	char name[NOTE_NAME_MAX + 1];
	uint32_t hash;
	uint8_t seed[ED25519_KEY_SIZE];
	uint8_t pub[ED25519_KEY_SIZE];
	EVP_PKEY *pkey;
};

/* ---- UTF-8 and names ------------------------------------------------------------------------ */

/*
 * Length of the well-formed UTF-8 sequence at s (shortest form, no surrogates, at most
 * U+10FFFF), its code point in *cp; 0 if the bytes there are not one.
 */
static size_t utf8_decode(const uint8_t *s, size_t len, uint32_t *cp)
{
	uint32_t c, min;
	size_t n;

	if (!len)
		return 0;
	c = s[0];
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		c &= 0x1f;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		c &= 0x0f;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		c &= 0x07;
		min = 0x10000;
	} else {
		return 0;
	}
	if (len < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

/* Go's unicode.IsSpace: the Unicode White_Space property. */
static bool is_unicode_space(uint32_t c)
{
	return c == ' ' || (c >= 0x09 && c <= 0x0d) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
	       (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f ||
	       c == 0x205f || c == 0x3000;
}

/* A key name of any length: what Go's isValidName accepts, minus control characters. */
static bool name_valid(const char *name, size_t len)
{
	const uint8_t *s = (const uint8_t *)name;
	size_t i = 0;

	if (!len)
		return false;
	while (i < len) {
		uint32_t c;
		size_t n = utf8_decode(s + i, len - i, &c);

		if (!n || c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == '+' || is_unicode_space(c))
			return false;
		i += n;
	}
	return true;
}

bool note_name_valid(const char *name)
{
	size_t len = strnlen(name, NOTE_NAME_MAX + 1);

	return len <= NOTE_NAME_MAX && name_valid(name, len);
}

/* Note text (C2SP signed-note): valid UTF-8 without ASCII control characters but "\n". */
static bool text_valid(const char *text, size_t len)
{
	const uint8_t *s = (const uint8_t *)text;
	size_t i = 0;

	while (i < len) {
		uint32_t c;
		size_t n = utf8_decode(s + i, len - i, &c);

		if (!n || (c < 0x20 && c != '\n'))
			return false;
		i += n;
	}
	return true;
}

/* ---- base64 (RFC 4648 section 4, with padding) ---------------------------------------------- */

static const char b64_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int b64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int note_base64_encode(const void *in, size_t len, char *out, size_t size)
{
	const uint8_t *p = in;
	size_t o = 0;

	if (len > (SIZE_MAX - 1) / 4 * 3 - 2 || size < B64_LEN(len) + 1)
		return -ENOSPC;
	if (B64_LEN(len) > INT32_MAX)
		return -ENOSPC;
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;
		size_t rest = len - i;

		if (rest > 1)
			v |= (uint32_t)p[i + 1] << 8;
		if (rest > 2)
			v |= p[i + 2];
		out[o++] = b64_alphabet[(v >> 18) & 0x3f];
		out[o++] = b64_alphabet[(v >> 12) & 0x3f];
		out[o++] = rest > 1 ? b64_alphabet[(v >> 6) & 0x3f] : '=';
		out[o++] = rest > 2 ? b64_alphabet[v & 0x3f] : '=';
	}
	out[o] = '\0';
	return (int)o;
}

/*
 * Strict decode: validates all of in, writes at most size bytes to out (out may be NULL when
 * size is 0) and returns the full decoded length in *n. -EINVAL if in is not canonical base64.
 */
static int b64_decode(const char *in, size_t len, uint8_t *out, size_t size, size_t *n)
{
	size_t o = 0;

	if (len % 4)
		return -EINVAL;
	for (size_t i = 0; i < len; i += 4) {
		bool last = i + 4 == len;
		int v[4], pad = 0;
		uint32_t w = 0;

		for (int k = 0; k < 4; k++) {
			char c = in[i + k];

			/* '=' only as the last one or two characters of the whole input. */
			if (c == '=' && last && k >= 2 && (k == 3 || in[i + 3] == '=')) {
				pad++;
				v[k] = 0;
				continue;
			}
			v[k] = b64_value(c);
			if (v[k] < 0)
				return -EINVAL;
		}
		w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | v[3];
		/* Canonical: the bits the padding leaves unused are zero. */
		if ((pad == 1 && (w & 0xff)) || (pad == 2 && (w & 0xffff)))
			return -EINVAL;
		for (int k = 0; k < 3 - pad; k++, o++) {
			if (o < size)
				out[o] = (uint8_t)(w >> (16 - 8 * k));
		}
	}
	*n = o;
	return 0;
}

int note_base64_decode(const char *in, size_t len, void *out, size_t size)
{
	size_t n;
	int err;

	if (len > INT32_MAX)
		return -EINVAL;
	err = b64_decode(in, len, out, size, &n);
	if (err)
		return err;
	if (n > size)
		return -ENOSPC;
	return (int)n;
}

/* ---- keys ----------------------------------------------------------------------------------- */

/* First 4 bytes, big-endian, of SHA-256(name "\n" 0x01 pub). */
static int key_hash(const char *name, const uint8_t pub[ED25519_KEY_SIZE], uint32_t *hash)
{
	size_t name_len = strlen(name);
	uint8_t md[EVP_MAX_MD_SIZE];
	uint8_t alg = ALG_ED25519;
	unsigned int md_len = 0;
	EVP_MD_CTX *ctx;
	int ok;

	ctx = EVP_MD_CTX_new();
	ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 &&
	     EVP_DigestUpdate(ctx, name, name_len) == 1 && EVP_DigestUpdate(ctx, "\n", 1) == 1 &&
	     EVP_DigestUpdate(ctx, &alg, 1) == 1 &&
	     EVP_DigestUpdate(ctx, pub, ED25519_KEY_SIZE) == 1 &&
	     EVP_DigestFinal_ex(ctx, md, &md_len) == 1 && md_len >= 4;
	EVP_MD_CTX_free(ctx);
	if (!ok)
		return -ENOMEM;
	*hash = (uint32_t)md[0] << 24 | (uint32_t)md[1] << 16 | (uint32_t)md[2] << 8 | md[3];
	return 0;
}

/* Exactly 8 lowercase hex digits. */
static int parse_hash(const char *s, size_t len, uint32_t *hash)
{
	uint32_t h = 0;

	if (len != 8)
		return -EINVAL;
	for (size_t i = 0; i < 8; i++) {
		char c = s[i];

		if (c >= '0' && c <= '9')
			h = h << 4 | (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			h = h << 4 | (uint32_t)(c - 'a' + 10);
		else
			return -EINVAL;
	}
	*hash = h;
	return 0;
}

/*
 * Split "NAME+HASH+BASE64" (len bytes, one trailing "\n" already removed): checks NAME and
 * HASH, decodes BASE64 into key (must be 0x01 followed by 32 bytes). The caller wipes key.
 */
static int parse_key(const char *s, size_t len, char name[NOTE_NAME_MAX + 1], uint32_t *hash,
		     uint8_t key[KEY_ENC_SIZE])
{
	const char *plus1, *plus2;
	size_t name_len, n;

	plus1 = memchr(s, '+', len);
	if (!plus1)
		return -EINVAL;
	name_len = (size_t)(plus1 - s);
	if (name_len > NOTE_NAME_MAX || !name_valid(s, name_len))
		return -EINVAL;
	plus2 = memchr(plus1 + 1, '+', len - name_len - 1);
	if (!plus2 || parse_hash(plus1 + 1, (size_t)(plus2 - plus1 - 1), hash))
		return -EINVAL;
	if (b64_decode(plus2 + 1, len - (size_t)(plus2 + 1 - s), key, KEY_ENC_SIZE, &n) ||
	    n != KEY_ENC_SIZE || key[0] != ALG_ED25519)
		return -EINVAL;
	memcpy(name, s, name_len);
	name[name_len] = '\0';
	return 0;
}

/* The key string's length without one trailing newline. */
static size_t key_len(const char *s)
{
	size_t len = strlen(s);

	if (len && s[len - 1] == '\n')
		len--;
	return len;
}

static int signer_from_seed(const char *name, const uint8_t seed[ED25519_KEY_SIZE],
			    struct note_signer **out)
{
	size_t pub_len = ED25519_KEY_SIZE;
	struct note_signer *s;
	int err;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	/* Callers checked the name; the copy cannot truncate. */
	memcpy(s->name, name, strlen(name) + 1);
	memcpy(s->seed, seed, ED25519_KEY_SIZE);
	s->pkey = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, ED25519_KEY_SIZE);
	if (!s->pkey || EVP_PKEY_get_raw_public_key(s->pkey, s->pub, &pub_len) != 1 ||
	    pub_len != ED25519_KEY_SIZE) {
		err = -ENOMEM;
		goto err_free;
	}
	err = key_hash(s->name, s->pub, &s->hash);
	if (err)
		goto err_free;
	*out = s;
	return 0;

err_free:
	note_signer_free(s);
	return err;
}

int note_signer_generate(const char *name, struct note_signer **out)
{
	uint8_t seed[ED25519_KEY_SIZE];
	size_t got = 0;
	int err;

	if (!note_name_valid(name))
		return -EINVAL;
	while (got < sizeof(seed)) {
		ssize_t n = getrandom(seed + got, sizeof(seed) - got, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto out;
		}
		got += (size_t)n;
	}
	err = signer_from_seed(name, seed, out);
out:
	OPENSSL_cleanse(seed, sizeof(seed));
	return err;
}

int note_signer_parse(const char *skey, struct note_signer **out)
{
	static const char prefix[] = "PRIVATE+KEY+";
	const size_t prefix_len = sizeof(prefix) - 1;
	char name[NOTE_NAME_MAX + 1];
	size_t len = key_len(skey);
	uint8_t key[KEY_ENC_SIZE];
	struct note_signer *s = NULL;
	uint32_t hash;
	int err;

	if (len < prefix_len || memcmp(skey, prefix, prefix_len))
		return -EINVAL;
	err = parse_key(skey + prefix_len, len - prefix_len, name, &hash, key);
	if (err)
		goto out;
	err = signer_from_seed(name, key + 1, &s);
	if (err)
		goto out;
	/* The hash names the public key, which only the seed gives: check it after deriving. */
	if (s->hash != hash) {
		err = -EINVAL;
		goto out;
	}
	*out = s;
	s = NULL;
out:
	note_signer_free(s);
	OPENSSL_cleanse(key, sizeof(key));
	return err;
}

/* NAME+HASH+BASE64(0x01 || key) into buf. */
static int encode_key(const char *prefix, const char *name, uint32_t hash,
		      const uint8_t key[ED25519_KEY_SIZE], char *buf, size_t size)
{
	char b64[B64_LEN(KEY_ENC_SIZE) + 1];
	uint8_t raw[KEY_ENC_SIZE];
	int n, err = 0;

	raw[0] = ALG_ED25519;
	memcpy(raw + 1, key, ED25519_KEY_SIZE);
	if (note_base64_encode(raw, sizeof(raw), b64, sizeof(b64)) < 0) {
		err = -ENOSPC;
		goto out;
	}
	n = snprintf(buf, size, "%s%s+%08x+%s", prefix, name, hash, b64);
	if (n < 0 || (size_t)n >= size) {
		/* A truncated private key is still secret material. */
		if (size)
			OPENSSL_cleanse(buf, size);
		err = -ENOSPC;
	}
out:
	OPENSSL_cleanse(raw, sizeof(raw));
	OPENSSL_cleanse(b64, sizeof(b64));
	return err;
}

int note_signer_skey(const struct note_signer *s, char *buf, size_t size)
{
	return encode_key("PRIVATE+KEY+", s->name, s->hash, s->seed, buf, size);
}

int note_signer_vkey(const struct note_signer *s, char *buf, size_t size)
{
	return encode_key("", s->name, s->hash, s->pub, buf, size);
}

const char *note_signer_name(const struct note_signer *s)
{
	return s->name;
}

void note_signer_free(struct note_signer *s)
{
	if (!s)
		return;
	/* EVP_PKEY_free wipes OpenSSL's copy of the private key. */
	EVP_PKEY_free(s->pkey);
	OPENSSL_cleanse(s, sizeof(*s));
	free(s);
}

int note_verifier_parse(const char *vkey, struct note_verifier *out)
{
	struct note_verifier v;
	uint8_t key[KEY_ENC_SIZE];
	uint32_t hash;
	int err;

	err = parse_key(vkey, key_len(vkey), v.name, &v.hash, key);
	if (err)
		return err;
	memcpy(v.pub, key + 1, ED25519_KEY_SIZE);
	err = key_hash(v.name, v.pub, &hash);
	if (err)
		return err;
	if (hash != v.hash)
		return -EINVAL;
	*out = v;
	return 0;
}

/* ---- signed notes --------------------------------------------------------------------------- */

static int ed25519_sign(EVP_PKEY *pkey, const void *msg, size_t len, uint8_t sig[ED25519_SIG_SIZE])
{
	size_t sig_len = ED25519_SIG_SIZE;
	EVP_MD_CTX *ctx;
	int ok;

	ctx = EVP_MD_CTX_new();
	/* Ed25519 is a one-shot scheme: no digest, and EVP_DigestSign rather than Update/Final. */
	ok = ctx && EVP_DigestSignInit(ctx, NULL, NULL, NULL, pkey) == 1 &&
	     EVP_DigestSign(ctx, sig, &sig_len, msg, len) == 1 && sig_len == ED25519_SIG_SIZE;
	EVP_MD_CTX_free(ctx);
	return ok ? 0 : -ENOMEM;
}

/* 0 valid, -EKEYREJECTED not a valid signature, -ENOMEM OpenSSL could not set up. */
static int ed25519_verify(const uint8_t pub[ED25519_KEY_SIZE], const void *msg, size_t len,
			  const uint8_t sig[ED25519_SIG_SIZE])
{
	EVP_MD_CTX *ctx = NULL;
	EVP_PKEY *pkey;
	int err = -ENOMEM;

	pkey = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, pub, ED25519_KEY_SIZE);
	if (!pkey)
		goto out;
	ctx = EVP_MD_CTX_new();
	if (!ctx || EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, pkey) != 1)
		goto out;
	err = EVP_DigestVerify(ctx, sig, ED25519_SIG_SIZE, msg, len) == 1 ? 0 : -EKEYREJECTED;
out:
	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(pkey);
	return err;
}

int note_sign(const struct note_signer *s, const char *text, size_t len, char *out, size_t size,
	      size_t *out_len)
{
	uint8_t sig[SIG_ENC_SIZE];
	char b64[B64_LEN(SIG_ENC_SIZE) + 1];
	size_t name_len = strlen(s->name), total;
	char *p;
	int err;

	if (!len || text[len - 1] != '\n' || !text_valid(text, len))
		return -EINVAL;
	/* text "\n" "— " name " " base64 "\n" NUL */
	total = len + 1 + SIG_PREFIX_LEN + name_len + 1 + B64_LEN(SIG_ENC_SIZE) + 1;
	if (len > SIZE_MAX / 2 || size < total + 1)
		return -ENOSPC;
	sig[0] = (uint8_t)(s->hash >> 24);
	sig[1] = (uint8_t)(s->hash >> 16);
	sig[2] = (uint8_t)(s->hash >> 8);
	sig[3] = (uint8_t)s->hash;
	err = ed25519_sign(s->pkey, text, len, sig + 4);
	if (err)
		return err;
	note_base64_encode(sig, sizeof(sig), b64, sizeof(b64));
	p = out;
	memmove(p, text, len); /* out may be text's own buffer */
	p += len;
	*p++ = '\n';
	memcpy(p, sig_prefix, SIG_PREFIX_LEN);
	p += SIG_PREFIX_LEN;
	memcpy(p, s->name, name_len);
	p += name_len;
	*p++ = ' ';
	memcpy(p, b64, B64_LEN(SIG_ENC_SIZE));
	p += B64_LEN(SIG_ENC_SIZE);
	*p++ = '\n';
	*p = '\0';
	*out_len = total;
	return 0;
}

int note_open(const struct note_verifier *v, const char *note, size_t len, size_t *text_len)
{
	size_t split, pos, n_sigs = 0, v_name_len = strlen(v->name);
	bool found = false, rejected = false;
	int err;

	if (!text_valid(note, len))
		return -EBADMSG;
	/* The text ends at the last blank line: signature lines are never empty. */
	if (len < 3)
		return -EBADMSG;
	split = len - 1;
	while (split > 0 && !(note[split - 1] == '\n' && note[split] == '\n'))
		split--;
	if (!split)
		return -EBADMSG;
	split--; /* note[split] and note[split + 1] are the "\n\n" */
	pos = split + 2;
	if (pos == len || note[len - 1] != '\n')
		return -EBADMSG;

	while (pos < len) {
		const char *line = note + pos, *eol, *name, *b64, *space;
		uint8_t sig[SIG_ENC_SIZE];
		size_t line_len, name_len, b64_len, sig_len;
		uint32_t hash;

		eol = memchr(line, '\n', len - pos);
		line_len = (size_t)(eol - line);
		pos += line_len + 1;
		if (++n_sigs > NOTE_MAX_SIGS)
			return -EBADMSG;
		if (line_len < SIG_PREFIX_LEN || memcmp(line, sig_prefix, SIG_PREFIX_LEN))
			return -EBADMSG;
		name = line + SIG_PREFIX_LEN;
		space = memchr(name, ' ', line_len - SIG_PREFIX_LEN);
		if (!space)
			return -EBADMSG;
		name_len = (size_t)(space - name);
		b64 = space + 1;
		b64_len = (size_t)(eol - b64);
		if (!name_valid(name, name_len) || !b64_len ||
		    b64_decode(b64, b64_len, sig, sizeof(sig), &sig_len) || sig_len < 5)
			return -EBADMSG;
		hash = (uint32_t)sig[0] << 24 | (uint32_t)sig[1] << 16 | (uint32_t)sig[2] << 8 |
		       sig[3];
		if (name_len != v_name_len || memcmp(name, v->name, name_len) || hash != v->hash)
			continue;
		found = true;
		if (rejected)
			continue;
		if (sig_len != SIG_ENC_SIZE) {
			rejected = true;
			continue;
		}
		err = ed25519_verify(v->pub, note, split + 1, sig + 4);
		if (err == -EKEYREJECTED)
			rejected = true;
		else if (err)
			return err;
	}
	if (rejected)
		return -EKEYREJECTED;
	if (!found)
		return -ENOKEY;
	*text_len = split + 1;
	return 0;
}

int note_open_sole(const struct note_verifier *v, const char *note, size_t len, size_t *text_len)
{
	size_t tlen, pos, lines = 0;
	int err = note_open(v, note, len, &tlen);

	if (err)
		return err;
	/* after the text, its blank line, then signature lines, each ending in "\n" */
	for (pos = tlen + 1; pos < len; pos++)
		lines += note[pos] == '\n';
	if (lines != 1)
		return -ENOTUNIQ;
	*text_len = tlen;
	return 0;
}

/* ---- checkpoints (C2SP tlog-checkpoint) ----------------------------------------------------- */

/* An origin line: non-empty note text without the newline. */
static bool origin_valid(const char *origin, size_t len)
{
	return len && !memchr(origin, '\n', len) && text_valid(origin, len);
}

int checkpoint_text(const char *origin, uint64_t size, const uint8_t root[TLOG_HASH_SIZE],
		    char *buf, size_t bufsize)
{
	char b64[B64_LEN(TLOG_HASH_SIZE) + 1];
	size_t origin_len = strlen(origin);
	int n;

	if (!origin_valid(origin, origin_len) || origin_len > INT32_MAX / 2)
		return -EINVAL;
	note_base64_encode(root, TLOG_HASH_SIZE, b64, sizeof(b64));
	n = snprintf(buf, bufsize, "%s\n%llu\n%s\n", origin, (unsigned long long)size, b64);
	if (n < 0 || (size_t)n >= bufsize)
		return -ENOSPC;
	return n;
}

int checkpoint_parse(const char *text, size_t len, char *origin, size_t origin_size, uint64_t *size,
		     uint8_t root[TLOG_HASH_SIZE])
{
	const char *p = text, *end = text + len, *eol;
	uint8_t hash[TLOG_HASH_SIZE];
	size_t origin_len, digits, n;
	uint64_t v = 0;

	/* Origin. */
	eol = memchr(p, '\n', len);
	if (!eol)
		return -EBADMSG;
	origin_len = (size_t)(eol - p);
	if (!origin_valid(p, origin_len))
		return -EBADMSG;
	if (origin_len >= origin_size)
		return -ENOSPC;
	memcpy(origin, p, origin_len);
	origin[origin_len] = '\0';
	p = eol + 1;

	/* Size: decimal, no sign, no leading zero, fits uint64. */
	eol = memchr(p, '\n', (size_t)(end - p));
	if (!eol)
		return -EBADMSG;
	digits = (size_t)(eol - p);
	if (!digits || (digits > 1 && p[0] == '0'))
		return -EBADMSG;
	for (size_t i = 0; i < digits; i++) {
		unsigned int d = (unsigned char)p[i] - '0';

		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return -EBADMSG;
		v = v * 10 + d;
	}
	p = eol + 1;

	/* Root hash, then the end of the text: extension lines are refused. */
	eol = memchr(p, '\n', (size_t)(end - p));
	if (!eol || eol + 1 != end)
		return -EBADMSG;
	if (b64_decode(p, (size_t)(eol - p), hash, sizeof(hash), &n) || n != TLOG_HASH_SIZE)
		return -EBADMSG;
	*size = v;
	memcpy(root, hash, TLOG_HASH_SIZE);
	return 0;
}

/* ---- key files ------------------------------------------------------------------------------ */

int note_key_line_read(const char *path, bool follow, char *buf, size_t size, mode_t *mode,
		       const char **why)
{
	size_t got = 0;
	struct stat st;
	int fd, err = 0;

	*why = NULL;
	*mode = S_IFREG;
	if (size < 2)
		return -EINVAL;
	/* O_NONBLOCK: a FIFO planted at the path must not hang open(); regular files ignore it. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (follow ? 0 : O_NOFOLLOW));
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		err = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		*mode = st.st_mode;
		err = -EINVAL;
		goto out;
	}
	if (st.st_size < 0 || (uint64_t)st.st_size > size - 1) {
		err = -EFBIG;
		goto out;
	}
	/* Read to EOF, one byte past the bound, so a file that grew is caught too. */
	for (;;) {
		ssize_t n = read(fd, buf + got, size - got);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto out;
		}
		if (!n)
			break;
		got += (size_t)n;
		if (got == size) {
			err = -EFBIG;
			goto out;
		}
	}
	/* One line: the key, then at most one newline and nothing after it. */
	if (got && buf[got - 1] == '\n')
		got--;
	for (size_t i = 0; i < got; i++) {
		if (buf[i] == '\r') {
			*why = "the key is followed by a CR (a CRLF line ending?); the file must hold "
			       "the key and one \"\\n\" only";
			err = -EINVAL;
			goto out;
		}
		if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f) {
			*why = "not one line holding the key (a control byte or a second line)";
			err = -EINVAL;
			goto out;
		}
	}
	if (!got) {
		*why = "empty";
		err = -EINVAL;
		goto out;
	}
	buf[got] = '\0';
out:
	if (err)
		OPENSSL_cleanse(buf, size);
	close(fd);
	return err;
}

int note_key_file_read(const char *path, char *buf, size_t size)
{
	const char *why;
	mode_t mode;

	return note_key_line_read(path, false, buf, size, &mode, &why);
}
