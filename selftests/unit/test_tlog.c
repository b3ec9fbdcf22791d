// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit test of userspace/tlog.c (RFC 9162 Merkle tree) and userspace/note.c (Ed25519 signed
 * notes, keys, checkpoints, base64, key files). Needs no root and no network. Every expected
 * value is independent of the code under test: published test vectors (sources named at each
 * table), a second Merkle tree written here straight from RFC 9162's recursive definition, or
 * literal bytes.
 *
 * Usage: test_tlog                           TAP 13; exits 1 if any test failed, 0 otherwise
 *
 * Test hooks for selftests/test_note_interop.sh (an independent verifier checks our output):
 *        test_tlog --sign SKEY_FILE TEXT_FILE  prints TEXT_FILE signed with the signer key
 *        test_tlog --open VKEY_FILE NOTE_FILE  opens a signed note with the verifier key; prints
 *                                              the text and exits 0, or exits 1 saying why
 *        test_tlog --checkpoint SKEY_FILE ORIGIN LINES_FILE
 *                                              prints the signed checkpoint of the Merkle tree
 *                                              whose leaves are LINES_FILE's lines (without "\n")
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "userspace/note.h"
#include "userspace/tlog.h"
#include "tap.h"

#define NOTE_BUF 8192
#define HOOK_MAX (64 * 1024)

static const char *err_name(int err)
{
	static char other[32];

	switch (err) {
	case 0:
		return "0";
	case -EBADMSG:
		return "-EBADMSG";
	case -EINVAL:
		return "-EINVAL";
	case -ENOSPC:
		return "-ENOSPC";
	case -ENOKEY:
		return "-ENOKEY";
	case -EKEYREJECTED:
		return "-EKEYREJECTED";
	case -ELOOP:
		return "-ELOOP";
	case -EFBIG:
		return "-EFBIG";
	default:
		snprintf(other, sizeof(other), "%d", err);
		return other;
	}
}

static void hex(const uint8_t *p, size_t len, char *out)
{
	for (size_t i = 0; i < len; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
}

static bool unhex(const char *s, uint8_t *out, size_t len)
{
	if (strlen(s) != 2 * len)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned int b;

		if (sscanf(s + 2 * i, "%2x", &b) != 1)
			return false;
		out[i] = (uint8_t)b;
	}
	return true;
}

/* ---- Merkle tree ---------------------------------------------------------------------------- */

/*
 * The leaves and the roots of the trees of size 0..8 over them, from transparency-dev/merkle
 * testonly/constants.go (LeafInputs, RootHashes; the same vectors as certificate-transparency's
 * merkle_tree_test and RFC 6962 implementations).
 */
static const struct {
	const char *hex;
} ct_leaves[] = {
	{""},
	{"00"},
	{"10"},
	{"2021"},
	{"3031"},
	{"40414243"},
	{"5051525354555657"},
	{"606162636465666768696a6b6c6d6e6f"},
};

static const char *const ct_roots[] = {
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	"6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
	"fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
	"aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
	"d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
	"4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
	"76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
	"ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
	"5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
};

static bool check_ct_root(size_t size, char *why)
{
	uint8_t leaf[16], root[TLOG_HASH_SIZE];
	char got[2 * TLOG_HASH_SIZE + 1];
	struct tlog_tree t;

	tlog_init(&t);
	for (size_t i = 0; i < size; i++) {
		size_t len = strlen(ct_leaves[i].hex) / 2;

		EXPECT(unhex(ct_leaves[i].hex, leaf, len), "bad test leaf %zu", i);
		tlog_append(&t, leaf, len);
		/* Taking the root must not disturb the tree. */
		tlog_root(&t, root);
	}
	EXPECT(t.size == size, "size %llu, expected %zu", (unsigned long long)t.size, size);
	tlog_root(&t, root);
	hex(root, TLOG_HASH_SIZE, got);
	EXPECT(!strcmp(got, ct_roots[size]), "root %s, expected %s", got, ct_roots[size]);
	return true;
}

/* RFC 9162 section 2.1.1, recursively, as a second implementation to compare with. */
static void mth(const uint8_t (*leaves)[8], size_t n, uint8_t out[TLOG_HASH_SIZE])
{
	uint8_t buf[1 + 2 * TLOG_HASH_SIZE];
	size_t k = 1;

	if (!n) {
		tlog_sha256("", 0, out);
		return;
	}
	if (n == 1) {
		buf[0] = 0x00;
		memcpy(buf + 1, leaves[0], 8);
		tlog_sha256(buf, 9, out);
		return;
	}
	while (k * 2 < n)
		k *= 2;
	buf[0] = 0x01;
	mth(leaves, k, buf + 1);
	mth(leaves + k, n - k, buf + 1 + TLOG_HASH_SIZE);
	tlog_sha256(buf, sizeof(buf), out);
}

static bool check_against_recursive(char *why)
{
	enum { N = 300 };
	static uint8_t leaves[N][8];
	uint8_t a[TLOG_HASH_SIZE], b[TLOG_HASH_SIZE];
	struct tlog_tree t;

	tlog_init(&t);
	for (size_t n = 0; n <= N; n++) {
		tlog_root(&t, a);
		mth(leaves, n, b);
		EXPECT(!memcmp(a, b, TLOG_HASH_SIZE), "size %zu: incremental root differs", n);
		if (n == N)
			break;
		for (int j = 0; j < 8; j++)
			leaves[n][j] = (uint8_t)(n * 31 + j * 7);
		tlog_append(&t, leaves[n], 8);
	}
	return true;
}

/* FIPS 180-2 appendix B.1. */
static bool check_sha256(char *why)
{
	uint8_t md[TLOG_HASH_SIZE];
	char got[2 * TLOG_HASH_SIZE + 1];
	const char *want = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

	tlog_sha256("abc", 3, md);
	hex(md, sizeof(md), got);
	EXPECT(!strcmp(got, want), "SHA-256(abc) = %s, expected %s", got, want);
	return true;
}

/* ---- Go sumdb/note vectors ------------------------------------------------------------------ */

/*
 * From golang.org/x/mod sumdb/note/note_test.go (TestNewVerifier, TestNewSigner, TestSign,
 * TestOpen) and the package documentation in note.go.
 */
#define PETER_VKEY "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
#define PETER_SKEY "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
#define PETER_PUB "1a5cd907143c384c41e830c5bce12aa8817ec5649aaabf2c31388b35b2d744d6"
#define ENOCH_VKEY "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop"
#define GO_TEXT                                                                                    \
	"If you think cryptography is the answer to your problem,\n"                               \
	"then you don't know what your problem is.\n"
/* One signature line each, split only to fit the line length. */
#define PETER_SIG                                                                                  \
	"\xe2\x80\x94 PeterNeumann "                                                               \
	"x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNI"                                           \
	"uGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n"
#define ENOCH_SIG                                                                                  \
	"\xe2\x80\x94 EnochRoot "                                                                  \
	"rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n"                                           \
	"2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=\n"
/* TestOpen's "Invalid signature": "ABCD" spliced into the signature at byte 60 of the line. */
#define PETER_SIG_ABCD                                                                             \
	"\xe2\x80\x94 PeterNeumann "                                                               \
	"x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZI"                                              \
	"ABCD"                                                                                     \
	"nNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n"
/* The same splice in Enoch's line (TestOpen, "Duplicated verified and unverified signatures"). */
#define ENOCH_SIG_ABCD                                                                             \
	"\xe2\x80\x94 EnochRoot "                                                                  \
	"rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n"                                           \
	"ABCD"                                                                                     \
	"2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=\n"

static int open_with(const char *vkey, const char *note, size_t len, size_t *text_len)
{
	struct note_verifier v;
	int err = note_verifier_parse(vkey, &v);

	if (err)
		return err;
	return note_open(&v, note, len, text_len);
}

static bool check_go_verifier(char *why)
{
	struct note_verifier v;
	uint8_t pub[32];
	int err;

	err = note_verifier_parse(PETER_VKEY, &v);
	EXPECT(!err, "note_verifier_parse(Go's key) = %s", err_name(err));
	EXPECT(!strcmp(v.name, "PeterNeumann"), "name %s", v.name);
	EXPECT(v.hash == 0xc74f20a3, "hash %08x, expected c74f20a3", v.hash);
	unhex(PETER_PUB, pub, 32);
	EXPECT(!memcmp(v.pub, pub, 32), "public key bytes differ");
	err = note_verifier_parse(PETER_VKEY "\n", &v);
	EXPECT(!err, "one trailing newline: %s, expected 0", err_name(err));
	return true;
}

static bool check_go_signer(char *why)
{
	struct note_signer *s = NULL;
	char buf[NOTE_SKEY_MAX + 1];
	int err;

	err = note_signer_parse(PETER_SKEY "\n", &s);
	EXPECT(!err, "note_signer_parse(Go's key) = %s", err_name(err));
	if (strcmp(note_signer_name(s), "PeterNeumann") || note_signer_vkey(s, buf, sizeof(buf)) ||
	    strcmp(buf, PETER_VKEY)) {
		snprintf(why, WHY_LEN, "name %s, derived vkey %s, expected %s", note_signer_name(s),
			 buf, PETER_VKEY);
		note_signer_free(s);
		return false;
	}
	err = note_signer_skey(s, buf, sizeof(buf));
	note_signer_free(s);
	EXPECT(!err && !strcmp(buf, PETER_SKEY), "skey round trip %s: %s", err_name(err), buf);
	return true;
}

/* TestNewVerifier / TestNewSigner: every proper substring and every one-byte change fails. */
static bool check_manglings(const char *key, bool is_signer, char *why)
{
	size_t len = strlen(key);
	char b[256];

	for (size_t i = 0; i <= len; i++) {
		for (size_t j = i + 1; j <= len; j++) {
			struct note_signer *s = NULL;
			struct note_verifier v;
			int err;

			if (i == 0 && j == len)
				continue;
			memcpy(b, key + i, j - i);
			b[j - i] = '\0';
			err = is_signer ? note_signer_parse(b, &s) : note_verifier_parse(b, &v);
			note_signer_free(s);
			EXPECT(err == -EINVAL, "substring [%zu,%zu) \"%s\": %s, expected -EINVAL",
			       i, j, b, err_name(err));
		}
	}
	memcpy(b, key, len + 1);
	for (size_t i = 0; i < len; i++) {
		struct note_signer *s = NULL;
		struct note_verifier v;
		int err;

		b[i]++;
		err = is_signer ? note_signer_parse(b, &s) : note_verifier_parse(b, &v);
		note_signer_free(s);
		EXPECT(err == -EINVAL, "byte %zu changed \"%s\": %s, expected -EINVAL", i, b,
		       err_name(err));
		b[i]--;
	}
	return true;
}

static bool check_go_vkey_manglings(char *why)
{
	return check_manglings(PETER_VKEY, false, why);
}

static bool check_go_skey_manglings(char *why)
{
	return check_manglings(PETER_SKEY, true, why);
}

/* Keys Go rejects, and the spellings only we reject (upper-case hash, non-canonical base64). */
static bool check_bad_keys(char *why)
{
	static const char *const bad_vkeys[] = {
		/* TestNewVerifier: wrong length key, with adjusted key hash */
		"PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY==",
		/* TestNewVerifier: unknown algorithm, with adjusted key hash */
		"PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
		"PeterNeumann+C74F20A3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
		"PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW\n\n",
		"PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW ",
		"PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW\r\n",
		"Peter Neumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
		"",
		"\n",
	};
	static const char *const bad_skeys[] = {
		PETER_VKEY,
		"PRIVATE+KEY+PeterNeumann+C74F20A3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz",
		"private+key+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz",
		"PRIVATE+KEY+EnochRoot+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz",
	};

	for (size_t i = 0; i < ARRAY_SIZE(bad_vkeys); i++) {
		struct note_verifier v;
		int err = note_verifier_parse(bad_vkeys[i], &v);

		EXPECT(err == -EINVAL, "vkey \"%s\": %s, expected -EINVAL", bad_vkeys[i],
		       err_name(err));
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad_skeys); i++) {
		struct note_signer *s = NULL;
		int err = note_signer_parse(bad_skeys[i], &s);

		note_signer_free(s);
		EXPECT(err == -EINVAL, "skey \"%s\": %s, expected -EINVAL", bad_skeys[i],
		       err_name(err));
	}
	return true;
}

/* TestSign: our signature over Go's text with Go's key is Go's, byte for byte. */
static bool check_go_sign(char *why)
{
	static const char want[] = GO_TEXT "\n" PETER_SIG;
	struct note_signer *s = NULL;
	char out[NOTE_BUF];
	size_t len = 0;
	int err;

	err = note_signer_parse(PETER_SKEY, &s);
	EXPECT(!err, "note_signer_parse: %s", err_name(err));
	err = note_sign(s, GO_TEXT, strlen(GO_TEXT), out, sizeof(out), &len);
	note_signer_free(s);
	EXPECT(!err, "note_sign: %s", err_name(err));
	EXPECT(len == strlen(want) && !strcmp(out, want), "signed note:\n%.1000s\nexpected:\n%s",
	       out, want);
	return true;
}

/* ---- note_open ------------------------------------------------------------------------------ */

struct open_case {
	const char *name;
	const char *vkey;
	const char *note;
	size_t len; /* 0: strlen(note) */
	int want;
};

#define GO_NOTE GO_TEXT "\n" PETER_SIG
#define TEN(x) x x x x x x x x x x

static const struct open_case open_cases[] = {
	/* TestOpen */
	{"Go: one signature verified, one unknown", PETER_VKEY, GO_TEXT "\n" PETER_SIG ENOCH_SIG, 0,
	 0},
	{"Go: Enoch's signature verifies", ENOCH_VKEY, GO_TEXT "\n" PETER_SIG ENOCH_SIG, 0, 0},
	{"Go: duplicated verified and unverified signatures", PETER_VKEY,
	 GO_TEXT "\n" PETER_SIG PETER_SIG ENOCH_SIG ENOCH_SIG ENOCH_SIG_ABCD, 0, 0},
	{"Go: 100 signatures", PETER_VKEY, GO_TEXT "\n" TEN(TEN(PETER_SIG)), 0, 0},
	{"Go: 101 signatures are too many", PETER_VKEY, GO_TEXT "\n" TEN(TEN(PETER_SIG)) PETER_SIG,
	 0, -EBADMSG},
	{"Go: invalid signature", PETER_VKEY, GO_TEXT "\n" PETER_SIG_ABCD, 0, -EKEYREJECTED},
	{"Go bad msg: text only", PETER_VKEY, GO_TEXT, 0, -EBADMSG},
	{"Go bad msg: text and blank line", PETER_VKEY, GO_TEXT "\n", 0, -EBADMSG},
	{"Go bad msg: no final newline", PETER_VKEY, GO_NOTE, sizeof(GO_NOTE) - 2, -EBADMSG},
	{"Go bad msg: control character", PETER_VKEY, "\x01" GO_NOTE, 0, -EBADMSG},
	{"Go bad msg: invalid UTF-8", PETER_VKEY, "\xff" GO_NOTE, 0, -EBADMSG},
	{"Go bad msg: bad name, no final newline", PETER_VKEY,
	 GO_TEXT "\n\xe2\x80\x94 Bad Name "
		 "x08go/ZJkuBS9UG/"
		 "SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=",
	 0, -EBADMSG},
	{"Go bad msg: unexpected line", PETER_VKEY, GO_NOTE "Unexpected line.\n", 0, -EBADMSG},
	/* Ours */
	{"Go's note opens", PETER_VKEY, GO_NOTE, 0, 0},
	{"one text byte changed", PETER_VKEY,
	 "If you think cryptography is the answer to your problem,\n"
	 "then you don't know what your problem is!\n\n" PETER_SIG,
	 0, -EKEYREJECTED},
	{"one signature byte changed", PETER_VKEY,
	 GO_TEXT "\n\xe2\x80\x94 PeterNeumann "
		 "x08go/ZJkuBS9UG/"
		 "SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnBM=\n",
	 0, -EKEYREJECTED},
	{"key hash byte changed: no signature by the key", PETER_VKEY,
	 GO_TEXT "\n\xe2\x80\x94 PeterNeumann "
		 "y08go/ZJkuBS9UG/"
		 "SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n",
	 0, -ENOKEY},
	{"unknown key", ENOCH_VKEY, GO_NOTE, 0, -ENOKEY},
	{"a repeated bad signature by the key is not ignored", PETER_VKEY,
	 GO_TEXT "\n" PETER_SIG PETER_SIG_ABCD, 0, -EKEYREJECTED},
	{"valid signature followed by 3 more bytes", PETER_VKEY,
	 GO_TEXT
	 "\n\xe2\x80\x94 PeterNeumann "
	 "x08go/ZJkuBS9UG/"
	 "SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAMAAAA=\n",
	 0, -EKEYREJECTED},
	{"signature one byte short", PETER_VKEY,
	 GO_TEXT "\n\xe2\x80\x94 PeterNeumann "
		 "x08go/ZJkuBS9UG/"
		 "SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnA==\n",
	 0, -EKEYREJECTED},
	{"non-canonical base64 in a signature", PETER_VKEY,
	 GO_TEXT "\n\xe2\x80\x94 PeterNeumann "
		 "x08go/ZJkuBS9UG/"
		 "SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAN=\n",
	 0, -EBADMSG},
	{"malformed foreign line after a valid signature", PETER_VKEY,
	 GO_NOTE "\xe2\x80\x94 EnochRoot !!!!\n", 0, -EBADMSG},
	{"signature shorter than 5 bytes", PETER_VKEY, GO_NOTE "\xe2\x80\x94 EnochRoot AAAAAA==\n",
	 0, -EBADMSG},
	{"hyphen instead of em dash", PETER_VKEY,
	 GO_TEXT "\n- PeterNeumann "
		 "x08go/ZJkuBS9UG/"
		 "SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n",
	 0, -EBADMSG},
	{"two spaces after the name", PETER_VKEY,
	 GO_TEXT "\n\xe2\x80\x94 PeterNeumann  "
		 "x08go/ZJkuBS9UG/"
		 "SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n",
	 0, -EBADMSG},
	{"CR before the final newline", PETER_VKEY,
	 GO_TEXT "\n\xe2\x80\x94 PeterNeumann "
		 "x08go/ZJkuBS9UG/"
		 "SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\r\n",
	 0, -EBADMSG},
	{"NUL byte in the text", PETER_VKEY, "If\0" GO_NOTE, sizeof("If\0" GO_NOTE) - 1, -EBADMSG},
	{"empty", PETER_VKEY, "", 0, -EBADMSG},
	{"blank lines only", PETER_VKEY, "\n\n\n", 0, -EBADMSG},
};

static bool run_open_case(const struct open_case *c, char *why)
{
	size_t len = c->len ? c->len : strlen(c->note), text_len = 0;
	int err = open_with(c->vkey, c->note, len, &text_len);

	EXPECT(err == c->want, "note_open = %s, expected %s", err_name(err), err_name(c->want));
	if (!err)
		EXPECT(text_len == strlen(GO_TEXT) && !memcmp(c->note, GO_TEXT, text_len),
		       "text length %zu, expected %zu", text_len, strlen(GO_TEXT));
	return true;
}

/*
 * note_open_sole(): the notes a log line holds carry their writer's one signature; a second line,
 * even a valid cosignature, is refused (-ENOTUNIQ), while note_open() ignores it as C2SP says.
 */
static bool check_open_sole(char *why)
{
	static const struct {
		const char *vkey, *note;
		int want;
	} c[] = {
		{PETER_VKEY, GO_NOTE, 0},
		{PETER_VKEY, GO_TEXT "\n" PETER_SIG ENOCH_SIG, -ENOTUNIQ},
		{PETER_VKEY, GO_TEXT "\n" ENOCH_SIG PETER_SIG, -ENOTUNIQ},
		{PETER_VKEY, GO_TEXT "\n" PETER_SIG PETER_SIG, -ENOTUNIQ},
		{ENOCH_VKEY, GO_NOTE, -ENOKEY},
		{PETER_VKEY, GO_TEXT "\n" PETER_SIG_ABCD ENOCH_SIG, -EKEYREJECTED},
	};
	struct note_verifier v;
	size_t text_len = 0;

	for (size_t i = 0; i < ARRAY_SIZE(c); i++) {
		int err = note_verifier_parse(c[i].vkey, &v);

		if (!err)
			err = note_open_sole(&v, c[i].note, strlen(c[i].note), &text_len);
		EXPECT(err == c[i].want, "case %zu: note_open_sole = %s, expected %s", i,
		       err_name(err), err_name(c[i].want));
		if (!err)
			EXPECT(text_len == strlen(GO_TEXT), "case %zu: text length %zu", i, text_len);
	}
	return true;
}

/* ---- generated keys, signing ---------------------------------------------------------------- */

static bool check_generate(char *why)
{
	struct note_signer *s = NULL, *s2 = NULL, *s3 = NULL;
	char skey[NOTE_SKEY_MAX + 1], vkey[NOTE_VKEY_MAX + 1], vkey2[NOTE_VKEY_MAX + 1];
	char out[NOTE_BUF];
	struct note_verifier v;
	size_t len, text_len;
	bool ok = false;
	int err;

	err = note_signer_generate("EnochRoot", &s);
	EXPECT(!err, "note_signer_generate: %s", err_name(err));
	if (note_signer_skey(s, skey, sizeof(skey)) || note_signer_vkey(s, vkey, sizeof(vkey))) {
		snprintf(why, WHY_LEN, "encode keys failed");
		goto out;
	}
	if (strncmp(skey, "PRIVATE+KEY+EnochRoot+", 22) || strncmp(vkey, "EnochRoot+", 10) ||
	    strlen(vkey) != 10 + 9 + 44 || strcmp(skey + 22 + 9, "") == 0 ||
	    strncmp(skey + 22, vkey + 10, 9)) {
		snprintf(why, WHY_LEN, "key strings %s / %s", skey, vkey);
		goto out;
	}
	/* skey parses back to the same key, vkey to its verifier. */
	err = note_signer_parse(skey, &s2);
	if (err || note_signer_vkey(s2, vkey2, sizeof(vkey2)) || strcmp(vkey, vkey2)) {
		snprintf(why, WHY_LEN, "skey round trip: %s, %s vs %s", err_name(err), vkey2, vkey);
		goto out;
	}
	err = note_verifier_parse(vkey, &v);
	if (err) {
		snprintf(why, WHY_LEN, "parse own vkey: %s", err_name(err));
		goto out;
	}
	err = note_sign(s2, "hi\n", 3, out, sizeof(out), &len);
	if (err || (err = note_open(&v, out, len, &text_len)) || text_len != 3) {
		snprintf(why, WHY_LEN, "sign/open: %s, text length %zu", err_name(err), text_len);
		goto out;
	}
	out[0] = 'H';
	err = note_open(&v, out, len, &text_len);
	if (err != -EKEYREJECTED) {
		snprintf(why, WHY_LEN, "corrupt message: %s, expected -EKEYREJECTED",
			 err_name(err));
		goto out;
	}
	/* Fresh randomness: a second key with the same name differs. */
	err = note_signer_generate("EnochRoot", &s3);
	if (err || note_signer_vkey(s3, vkey2, sizeof(vkey2)) || !strcmp(vkey, vkey2)) {
		snprintf(why, WHY_LEN, "second key: %s, %s", err_name(err), vkey2);
		goto out;
	}
	ok = true;
out:
	note_signer_free(s);
	note_signer_free(s2);
	note_signer_free(s3);
	return ok;
}

static bool check_sign_rejects(char *why)
{
	static const struct {
		const char *text;
		size_t len;
	} bad[] = {
		{"abc", 3},   {"", 0},	    {"a\x01\n", 3},    {"\xff\n", 2},
		{"a\0\n", 3}, {"a\r\n", 3}, {"\xc0\xaf\n", 3}, {"\xed\xa0\x80\n", 4},
	};
	struct note_signer *s = NULL;
	char out[NOTE_BUF], small[8];
	size_t len;
	int err;

	err = note_signer_parse(PETER_SKEY, &s);
	EXPECT(!err, "note_signer_parse: %s", err_name(err));
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		err = note_sign(s, bad[i].text, bad[i].len, out, sizeof(out), &len);
		if (err != -EINVAL) {
			note_signer_free(s);
			snprintf(why, WHY_LEN, "text %zu: %s, expected -EINVAL", i, err_name(err));
			return false;
		}
	}
	/* Exactly large enough, then one byte short. */
	err = note_sign(s, GO_TEXT, strlen(GO_TEXT), out, sizeof(GO_NOTE), &len);
	if (!err)
		err = note_sign(s, GO_TEXT, strlen(GO_TEXT), out, sizeof(GO_NOTE) - 1, &len) ==
				      -ENOSPC
			      ? 0
			      : -1;
	if (!err)
		err = note_signer_skey(s, small, sizeof(small)) == -ENOSPC ? 0 : -1;
	note_signer_free(s);
	EXPECT(!err, "buffer size limits: %s", err_name(err));
	EXPECT(!strcmp(small, ""), "a truncated skey was left in the buffer: %s", small);
	/* Non-ASCII UTF-8 text is fine. */
	err = note_signer_parse(PETER_SKEY, &s);
	EXPECT(!err, "note_signer_parse: %s", err_name(err));
	err = note_sign(s, "caf\xc3\xa9 \xe2\x80\x94 ok\n", 13, out, sizeof(out), &len);
	note_signer_free(s);
	EXPECT(!err, "UTF-8 text: %s, expected 0", err_name(err));
	return true;
}

static bool check_names(char *why)
{
	static const struct {
		const char *name;
		bool valid;
	} cases[] = {
		{"a", true},
		{"sluice/run-1_2.x", true},
		{"caf\xc3\xa9", true},
		{"", false},
		{"a b", false},
		{"a+b", false},
		{"a\tb", false},
		{"a\nb", false},
		{"a\x7f", false},
		{"a\xc2\x85", false},	  /* U+0085 NEL */
		{"a\xc2\xa0", false},	  /* U+00A0 NBSP */
		{"a\xe3\x80\x80", false}, /* U+3000 */
		{"a\xe2\x80\xa8", false}, /* U+2028 */
		{"a\xff", false},
		{"a\xc0\xae", false},	      /* overlong */
		{"a\xe0\x80\xaf", false},     /* overlong, 3 bytes */
		{"a\xf0\x80\x80\xaf", false}, /* overlong, 4 bytes */
		{"a\xed\xa0\x80", false},     /* surrogate */
		{"a\xf4\x90\x80\x80", false}, /* above U+10FFFF */
	};
	char long_name[NOTE_NAME_MAX + 2];

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		EXPECT(note_name_valid(cases[i].name) == cases[i].valid,
		       "name \"%s\": %d, expected %d", cases[i].name, !cases[i].valid,
		       cases[i].valid);
	memset(long_name, 'x', NOTE_NAME_MAX);
	long_name[NOTE_NAME_MAX] = '\0';
	EXPECT(note_name_valid(long_name), "%d-byte name refused", NOTE_NAME_MAX);
	long_name[NOTE_NAME_MAX] = 'x';
	long_name[NOTE_NAME_MAX + 1] = '\0';
	EXPECT(!note_name_valid(long_name), "%d-byte name accepted", NOTE_NAME_MAX + 1);
	return true;
}

/* ---- base64 --------------------------------------------------------------------------------- */

/* RFC 4648 section 10. */
static const struct {
	const char *raw, *b64;
} b64_vectors[] = {
	{"", ""},
	{"f", "Zg=="},
	{"fo", "Zm8="},
	{"foo", "Zm9v"},
	{"foob", "Zm9vYg=="},
	{"fooba", "Zm9vYmE="},
	{"foobar", "Zm9vYmFy"},
};

static bool check_base64(char *why)
{
	static const char *const bad[] = {
		"Zg=",	 "Zg",	   "Zh==",     "Zm9=", "Zg==Zg==", "Z===", "=Zg=",
		"Zm 9v", "Zm9v\n", "Zm9v====", "Zg=A", "Zm9v-_==", "====",
	};
	char enc[64];
	uint8_t dec[64];
	int n;

	for (size_t i = 0; i < ARRAY_SIZE(b64_vectors); i++) {
		const char *raw = b64_vectors[i].raw, *b64 = b64_vectors[i].b64;

		n = note_base64_encode(raw, strlen(raw), enc, sizeof(enc));
		EXPECT(n == (int)strlen(b64) && !strcmp(enc, b64), "encode \"%s\" = %d \"%s\"", raw,
		       n, enc);
		n = note_base64_decode(b64, strlen(b64), dec, sizeof(dec));
		EXPECT(n == (int)strlen(raw) && !memcmp(dec, raw, strlen(raw)),
		       "decode \"%s\" = %d", b64, n);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		n = note_base64_decode(bad[i], strlen(bad[i]), dec, sizeof(dec));
		EXPECT(n == -EINVAL, "decode \"%s\" = %d, expected -EINVAL", bad[i], n);
	}
	n = note_base64_decode("Zm9vYmFy", 8, dec, 5);
	EXPECT(n == -ENOSPC, "decode into 5 bytes = %d, expected -ENOSPC", n);
	n = note_base64_encode("foo", 3, enc, 4);
	EXPECT(n == -ENOSPC, "encode into 4 bytes = %d, expected -ENOSPC", n);
	n = note_base64_encode("foo", 3, enc, 5);
	EXPECT(n == 4, "encode into 5 bytes = %d, expected 4", n);
	return true;
}

/* ---- checkpoints ---------------------------------------------------------------------------- */

static bool check_checkpoint_text(char *why)
{
	/* The root of the 8-leaf tree above; its base64 computed separately (Python). */
	static const char want[] =
		"example.com/log\n8\nXcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=\n";
	uint8_t root[TLOG_HASH_SIZE], root2[TLOG_HASH_SIZE];
	char buf[256], origin[64];
	uint64_t size;
	int n, err;

	unhex(ct_roots[8], root, TLOG_HASH_SIZE);
	n = checkpoint_text("example.com/log", 8, root, buf, sizeof(buf));
	EXPECT(n == (int)strlen(want) && !strcmp(buf, want), "checkpoint_text = %d:\n%s", n, buf);
	err = checkpoint_parse(buf, (size_t)n, origin, sizeof(origin), &size, root2);
	EXPECT(!err && !strcmp(origin, "example.com/log") && size == 8 &&
		       !memcmp(root, root2, TLOG_HASH_SIZE),
	       "parse: %s, origin %s, size %llu", err_name(err), origin, (unsigned long long)size);
	n = checkpoint_text("o", UINT64_MAX, root, buf, sizeof(buf));
	err = n < 0 ? n : checkpoint_parse(buf, (size_t)n, origin, sizeof(origin), &size, root2);
	EXPECT(!err && size == UINT64_MAX && strstr(buf, "\n18446744073709551615\n"),
	       "UINT64_MAX: %s, %s", err_name(err), buf);
	n = checkpoint_text("o", 0, root, buf, sizeof(buf));
	err = n < 0 ? n : checkpoint_parse(buf, (size_t)n, origin, sizeof(origin), &size, root2);
	EXPECT(!err && size == 0 && strstr(buf, "\n0\n"), "size 0: %s, %s", err_name(err), buf);
	n = checkpoint_text("", 1, root, buf, sizeof(buf));
	EXPECT(n == -EINVAL, "empty origin: %d, expected -EINVAL", n);
	n = checkpoint_text("a\nb", 1, root, buf, sizeof(buf));
	EXPECT(n == -EINVAL, "origin with a newline: %d, expected -EINVAL", n);
	n = checkpoint_text("example.com/log", 8, root, buf, strlen(want));
	EXPECT(n == -ENOSPC, "no room for the NUL: %d, expected -ENOSPC", n);
	err = checkpoint_parse(want, strlen(want), origin, 15, &size, root2);
	EXPECT(err == -ENOSPC, "origin buffer too small: %s, expected -ENOSPC", err_name(err));
	return true;
}

#define ROOT_B64 "XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg="

static bool check_checkpoint_rejects(char *why)
{
	static const char *const bad[] = {
		"o\n08\n" ROOT_B64 "\n",
		"o\n+8\n" ROOT_B64 "\n",
		"o\n-1\n" ROOT_B64 "\n",
		"o\n 8\n" ROOT_B64 "\n",
		"o\n8 \n" ROOT_B64 "\n",
		"o\n0x8\n" ROOT_B64 "\n",
		"o\n18446744073709551616\n" ROOT_B64 "\n",
		"o\n99999999999999999999\n" ROOT_B64 "\n",
		"o\n\n" ROOT_B64 "\n",
		"\n8\n" ROOT_B64 "\n",
		"o\r\n8\n" ROOT_B64 "\n",
		"o\n8\n" ROOT_B64 "\nextension line\n",
		"o\n8\n" ROOT_B64 "\n\n",
		"o\n8\n" ROOT_B64,
		"o\n8\n",
		"o\n8",
		"o",
		"",
		"o\n8\nXcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQw==\n",	    /* 31 bytes */
		"o\n8\nXcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyh=\n",	    /* non-canonical */
		"o\n8\nXcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=AAAA\n", /* 35 bytes */
		"o\n8\nXcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz-Nw7_RgQyg=\n",	    /* base64url */
	};
	uint8_t root[TLOG_HASH_SIZE];
	char origin[64];
	uint64_t size;

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		int err = checkpoint_parse(bad[i], strlen(bad[i]), origin, sizeof(origin), &size,
					   root);

		EXPECT(err == -EBADMSG, "case %zu \"%s\": %s, expected -EBADMSG", i, bad[i],
		       err_name(err));
	}
	return true;
}

/* A checkpoint signed by a fresh key opens, and parses back to what was signed. */
static bool check_signed_checkpoint(char *why)
{
	uint8_t root[TLOG_HASH_SIZE], root2[TLOG_HASH_SIZE];
	char text[256], note[NOTE_BUF], vkey[NOTE_VKEY_MAX + 1], origin[64];
	struct note_signer *s = NULL;
	struct note_verifier v;
	size_t len = 0, text_len = 0;
	uint64_t size = 0;
	struct tlog_tree t;
	int n, err;

	tlog_init(&t);
	for (int i = 0; i < 5; i++)
		tlog_append(&t, "{\"seq\":0}", 9);
	tlog_root(&t, root);
	n = checkpoint_text("sluice/test-run", t.size, root, text, sizeof(text));
	EXPECT(n > 0, "checkpoint_text: %d", n);
	err = note_signer_generate("sluice/test-run", &s);
	EXPECT(!err, "generate: %s", err_name(err));
	err = note_sign(s, text, (size_t)n, note, sizeof(note), &len);
	if (!err)
		err = note_signer_vkey(s, vkey, sizeof(vkey));
	note_signer_free(s);
	EXPECT(!err, "sign: %s", err_name(err));
	err = note_verifier_parse(vkey, &v);
	if (!err)
		err = note_open(&v, note, len, &text_len);
	EXPECT(!err && text_len == (size_t)n, "open: %s, text length %zu", err_name(err), text_len);
	err = checkpoint_parse(note, text_len, origin, sizeof(origin), &size, root2);
	EXPECT(!err && size == 5 && !memcmp(root, root2, TLOG_HASH_SIZE) &&
		       !strcmp(origin, "sluice/test-run"),
	       "parse: %s", err_name(err));
	/* The whole note is not a checkpoint text: the signature block is an extension. */
	err = checkpoint_parse(note, len, origin, sizeof(origin), &size, root2);
	EXPECT(err == -EBADMSG, "parse of the whole note: %s, expected -EBADMSG", err_name(err));
	return true;
}

/* ---- key files ------------------------------------------------------------------------------ */

static char tmpdir[] = "/tmp/test_tlog.XXXXXX";

static int put_file(const char *name, const void *data, size_t len, char *path, size_t size)
{
	FILE *f;

	snprintf(path, size, "%s/%s", tmpdir, name);
	f = fopen(path, "wb");
	if (!f)
		return -errno;
	if (fwrite(data, 1, len, f) != len) {
		fclose(f);
		return -EIO;
	}
	return fclose(f) ? -errno : 0;
}

static bool check_key_files(char *why)
{
	static const struct {
		const char *name, *data;
		size_t len;
		int want;
		const char *got;
	} cases[] = {
		{"nl", "key\n", 4, 0, "key"},
		{"no-nl", "key", 3, 0, "key"},
		{"two-nl", "key\n\n", 5, -EINVAL, NULL},
		{"after-nl", "key\nx", 5, -EINVAL, NULL},
		{"empty", "", 0, -EINVAL, NULL},
		{"only-nl", "\n", 1, -EINVAL, NULL},
		{"crlf", "key\r\n", 5, -EINVAL, NULL},
		{"nul", "k\0y\n", 4, -EINVAL, NULL},
		{"fits", "0123456789abcde\n", 16, 0, "0123456789abcde"},
		{"too-big", "0123456789abcdef\n", 17, -EFBIG, NULL},
	};
	char path[512], link[512], buf[17];
	const char *reason;
	mode_t mode;
	int err;

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		err = put_file(cases[i].name, cases[i].data, cases[i].len, path, sizeof(path));
		EXPECT(!err, "write %s: %s", path, strerror(-err));
		err = note_key_file_read(path, buf, sizeof(buf));
		EXPECT(err == cases[i].want, "%s: %s, expected %s", cases[i].name, err_name(err),
		       err_name(cases[i].want));
		if (!err)
			EXPECT(!strcmp(buf, cases[i].got), "%s: read \"%s\"", cases[i].name, buf);
	}
	/* Not through a symlink, even to a good key file; not a FIFO (without hanging); not a
	 * directory; a missing file is ENOENT. */
	snprintf(path, sizeof(path), "%s/nl", tmpdir);
	snprintf(link, sizeof(link), "%s/link", tmpdir);
	EXPECT(!symlink(path, link), "symlink: %s", strerror(errno));
	err = note_key_file_read(link, buf, sizeof(buf));
	EXPECT(err == -ELOOP, "symlink: %s, expected -ELOOP", err_name(err));
	/* a verifier key (follow) may be reached through one, and is held to the same rules */
	err = note_key_line_read(link, true, buf, sizeof(buf), &mode, &reason);
	EXPECT(!err, "symlink, followed: %s", err_name(err));
	err = put_file("crlf", "key\r\n", 5, path, sizeof(path));
	EXPECT(!err, "write %s: %s", path, strerror(-err));
	err = note_key_line_read(path, true, buf, sizeof(buf), &mode, &reason);
	EXPECT(err == -EINVAL && reason && strstr(reason, "CR"), "CRLF: %s (%s)", err_name(err),
	       reason ? reason : "no reason");
	snprintf(path, sizeof(path), "%s/fifo", tmpdir);
	EXPECT(!mkfifo(path, 0600), "mkfifo: %s", strerror(errno));
	err = note_key_file_read(path, buf, sizeof(buf));
	EXPECT(err == -EINVAL, "FIFO: %s, expected -EINVAL", err_name(err));
	err = note_key_file_read(tmpdir, buf, sizeof(buf));
	EXPECT(err == -EINVAL, "directory: %s, expected -EINVAL", err_name(err));
	snprintf(path, sizeof(path), "%s/missing", tmpdir);
	err = note_key_file_read(path, buf, sizeof(buf));
	EXPECT(err == -ENOENT, "missing: %s, expected -ENOENT", err_name(err));
	return true;
}

static void cleanup_tmpdir(void)
{
	static const char *const names[] = {"nl",    "no-nl",	"two-nl", "after-nl",
					    "empty", "only-nl", "crlf",	  "nul",
					    "fits",  "too-big", "link",	  "fifo"};
	char path[512];

	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		snprintf(path, sizeof(path), "%s/%s", tmpdir, names[i]);
		unlink(path);
	}
	rmdir(tmpdir);
}

/* ---- test hooks ----------------------------------------------------------------------------- */

static int read_small(const char *path, char *buf, size_t size, size_t *len)
{
	FILE *f = fopen(path, "rb");

	if (!f)
		return -errno;
	*len = fread(buf, 1, size, f);
	if (ferror(f) || *len == size) {
		fclose(f);
		return -EFBIG;
	}
	fclose(f);
	return 0;
}

static int hook_sign(const char *skey_path, const char *text_path)
{
	static char text[HOOK_MAX], out[HOOK_MAX + 512];
	char skey[NOTE_SKEY_MAX + 2];
	struct note_signer *s = NULL;
	size_t len, out_len;
	int err;

	err = note_key_file_read(skey_path, skey, sizeof(skey));
	if (!err)
		err = note_signer_parse(skey, &s);
	memset(skey, 0, sizeof(skey));
	if (err) {
		fprintf(stderr, "%s: %s\n", skey_path, strerror(-err));
		return 1;
	}
	err = read_small(text_path, text, sizeof(text), &len);
	if (!err)
		err = note_sign(s, text, len, out, sizeof(out), &out_len);
	note_signer_free(s);
	if (err) {
		fprintf(stderr, "sign %s: %s\n", text_path, strerror(-err));
		return 1;
	}
	return fwrite(out, 1, out_len, stdout) == out_len && !fflush(stdout) ? 0 : 1;
}

static int hook_checkpoint(const char *skey_path, const char *origin, const char *lines_path)
{
	static char lines[HOOK_MAX], out[HOOK_MAX];
	char skey[NOTE_SKEY_MAX + 2], text[512];
	uint8_t root[TLOG_HASH_SIZE];
	struct note_signer *s = NULL;
	size_t len, out_len, start = 0;
	struct tlog_tree t;
	int n, err;

	err = note_key_file_read(skey_path, skey, sizeof(skey));
	if (!err)
		err = note_signer_parse(skey, &s);
	memset(skey, 0, sizeof(skey));
	if (err) {
		fprintf(stderr, "%s: %s\n", skey_path, strerror(-err));
		return 1;
	}
	err = read_small(lines_path, lines, sizeof(lines), &len);
	if (err || (len && lines[len - 1] != '\n')) {
		fprintf(stderr, "%s: %s\n", lines_path, err ? strerror(-err) : "no final newline");
		note_signer_free(s);
		return 1;
	}
	tlog_init(&t);
	for (size_t i = 0; i < len; i++) {
		if (lines[i] == '\n') {
			tlog_append(&t, lines + start, i - start);
			start = i + 1;
		}
	}
	tlog_root(&t, root);
	n = checkpoint_text(origin, t.size, root, text, sizeof(text));
	err = n < 0 ? n : note_sign(s, text, (size_t)n, out, sizeof(out), &out_len);
	note_signer_free(s);
	if (err) {
		fprintf(stderr, "checkpoint: %s\n", strerror(-err));
		return 1;
	}
	return fwrite(out, 1, out_len, stdout) == out_len && !fflush(stdout) ? 0 : 1;
}

static int hook_open(const char *vkey_path, const char *note_path)
{
	static char note[HOOK_MAX];
	char vkey[NOTE_VKEY_MAX + 2];
	struct note_verifier v;
	size_t len, text_len;
	int err;

	err = note_key_file_read(vkey_path, vkey, sizeof(vkey));
	if (!err)
		err = note_verifier_parse(vkey, &v);
	if (err) {
		fprintf(stderr, "%s: %s\n", vkey_path, strerror(-err));
		return 1;
	}
	err = read_small(note_path, note, sizeof(note), &len);
	if (!err)
		err = note_open(&v, note, len, &text_len);
	if (err) {
		fprintf(stderr, "open %s: %s\n", note_path, err_name(err));
		return 1;
	}
	return fwrite(note, 1, text_len, stdout) == text_len && !fflush(stdout) ? 0 : 1;
}

/* ---- main ----------------------------------------------------------------------------------- */

static const struct {
	const char *name;
	bool (*fn)(char *why);
} misc_cases[] = {
	{"SHA-256 of \"abc\" (FIPS 180-2)", check_sha256},
	{"incremental roots equal RFC 9162's recursive MTH, sizes 0..300", check_against_recursive},
	{"Go: NewVerifier(PeterNeumann) name, hash, key", check_go_verifier},
	{"Go: NewSigner(PeterNeumann) derives Go's verifier key; skey round trip", check_go_signer},
	{"Go: every substring / one-byte change of the verifier key is refused",
	 check_go_vkey_manglings},
	{"Go: every substring / one-byte change of the signer key is refused",
	 check_go_skey_manglings},
	{"malformed keys Go refuses, and the spellings we refuse", check_bad_keys},
	{"Go: Sign gives Go's signature byte for byte", check_go_sign},
	{"generated key: encodings, round trips, sign/open, fresh", check_generate},
	{"note_open_sole: the one signature of a log's note, a cosignature refused", check_open_sole},
	{"note_sign refuses bad text and short buffers", check_sign_rejects},
	{"key name validity", check_names},
	{"base64: RFC 4648 vectors, strict decoding", check_base64},
	{"checkpoint_text / checkpoint_parse round trips", check_checkpoint_text},
	{"checkpoint_parse refuses non-canonical texts", check_checkpoint_rejects},
	{"signed checkpoint opens and parses back", check_signed_checkpoint},
	{"note_key_file_read: one line, bounded, no symlink/FIFO/dir", check_key_files},
};

int main(int argc, char **argv)
{
	size_t plan = ARRAY_SIZE(ct_roots) + ARRAY_SIZE(open_cases) + ARRAY_SIZE(misc_cases);
	char why[WHY_LEN], name[256];

	if (argc == 4 && !strcmp(argv[1], "--sign"))
		return hook_sign(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "--open"))
		return hook_open(argv[2], argv[3]);
	if (argc == 5 && !strcmp(argv[1], "--checkpoint"))
		return hook_checkpoint(argv[2], argv[3], argv[4]);
	if (argc != 1) {
		fprintf(stderr,
			"usage: %s | --sign SKEY_FILE TEXT_FILE | --open VKEY_FILE NOTE_FILE |\n"
			"       --checkpoint SKEY_FILE ORIGIN LINES_FILE\n",
			argv[0]);
		return 2;
	}
	if (!mkdtemp(tmpdir)) {
		fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	printf("TAP version 13\n1..%zu\n", plan);
	for (size_t i = 0; i < ARRAY_SIZE(ct_roots); i++) {
		why[0] = '\0';
		snprintf(name, sizeof(name), "Merkle root of the CT test leaves, size %zu", i);
		report(check_ct_root(i, why), name, why);
	}
	for (size_t i = 0; i < ARRAY_SIZE(open_cases); i++) {
		why[0] = '\0';
		snprintf(name, sizeof(name), "note_open: %s", open_cases[i].name);
		report(run_open_case(&open_cases[i], why), name, why);
	}
	for (size_t i = 0; i < ARRAY_SIZE(misc_cases); i++) {
		why[0] = '\0';
		report(misc_cases[i].fn(why), misc_cases[i].name, why);
	}
	cleanup_tmpdir();
	return tap_status();
}
