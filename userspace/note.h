/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Ed25519 keys and signed notes in the C2SP signed-note format (the format of Go's
 * golang.org/x/mod/sumdb/note, so checkpoints verify with independent implementations), and the
 * C2SP tlog-checkpoint body the log's checkpoints sign.
 *
 *   verifier key  NAME+HASH+BASE64(0x01 || public key)
 *   signer key    PRIVATE+KEY+NAME+HASH+BASE64(0x01 || 32-byte seed)
 *   HASH          first 4 bytes (big-endian, 8 hex digits) of SHA-256(NAME "\n" 0x01 || public)
 *   signed note   TEXT "\n" then one line per signature: "— " NAME " " BASE64(HASH4 || sig)
 *
 * All functions return 0 or a negative errno; none prints.
 */
#ifndef SLUICE_NOTE_H
#define SLUICE_NOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h> /* mode_t */

#include "tlog.h"

#define NOTE_NAME_MAX 128
#define NOTE_VKEY_MAX (NOTE_NAME_MAX + 64)
#define NOTE_SKEY_MAX (NOTE_NAME_MAX + 80)

/* A private key; its bytes are wiped when it is freed. */
struct note_signer;

struct note_verifier {
	char name[NOTE_NAME_MAX + 1];
	uint32_t hash;
	uint8_t pub[32];
};

/* A key name: 1..NOTE_NAME_MAX bytes, no whitespace, '+' or control characters. */
bool note_name_valid(const char *name);

/* A fresh key pair from getrandom(). */
int note_signer_generate(const char *name, struct note_signer **out);
/* Parse a signer key string (trailing newline allowed). -EINVAL if malformed. */
int note_signer_parse(const char *skey, struct note_signer **out);
/* Encode the signer key / its verifier key into buf (NUL-terminated, no newline). */
int note_signer_skey(const struct note_signer *s, char *buf, size_t size);
int note_signer_vkey(const struct note_signer *s, char *buf, size_t size);
const char *note_signer_name(const struct note_signer *s);
/* Wipe and free; accepts NULL. */
void note_signer_free(struct note_signer *s);

/* Parse a verifier key string (trailing newline allowed); checks that HASH matches. */
int note_verifier_parse(const char *vkey, struct note_verifier *out);

/*
 * Sign text (non-empty, ending in "\n", UTF-8 without control characters other than "\n"):
 * writes the whole signed note, NUL-terminated, into out; *out_len gets its length.
 * -EINVAL bad text, -ENOSPC out too small.
 */
int note_sign(const struct note_signer *s, const char *text, size_t len, char *out, size_t size,
	      size_t *out_len);

/*
 * Open a signed note: 0 when it is well formed and carries a valid signature by v; *text_len
 * gets the length of its text (up to and including the text's last "\n"). Other signatures are
 * ignored. -EBADMSG malformed note, -ENOKEY no signature line by v's name and hash,
 * -EKEYREJECTED a signature by v that does not verify.
 */
int note_open(const struct note_verifier *v, const char *note, size_t len, size_t *text_len);

/*
 * note_open(), for a note whose writer signs with one key only (the log's own notes: the
 * certificates and checkpoint notes a log line holds): also -ENOTUNIQ when it carries any
 * signature line besides v's one. (Other signatures are C2SP's cosignatures: a copy of a note
 * may gather them, the line the writer wrote never does.)
 */
int note_open_sole(const struct note_verifier *v, const char *note, size_t len, size_t *text_len);

/* The C2SP tlog-checkpoint text: ORIGIN "\n" SIZE "\n" BASE64(ROOT) "\n". Returns its length. */
int checkpoint_text(const char *origin, uint64_t size, const uint8_t root[TLOG_HASH_SIZE],
		    char *buf, size_t bufsize);
/* Parse such a text (extension lines after the root are refused). */
int checkpoint_parse(const char *text, size_t len, char *origin, size_t origin_size,
		     uint64_t *size, uint8_t root[TLOG_HASH_SIZE]);

/* Standard base64 with padding. encode: returns length written (NUL-terminated) or -ENOSPC.
 * decode: strict (canonical padding, no whitespace), returns bytes written or -EINVAL/-ENOSPC. */
int note_base64_encode(const void *in, size_t len, char *out, size_t size);
int note_base64_decode(const char *in, size_t len, void *out, size_t size);

/*
 * Read a key file into buf (NUL-terminated): a regular file of at most size-1 bytes, one line
 * (the key, then at most one newline, removed). The one reader of the signing key and of
 * verifier keys, so that what either accepts cannot drift. follow: whether a symlink at path is
 * followed (a public key may be one, the private key never). 0, or -errno: -EFBIG larger than
 * size-1, -EINVAL with *mode the file's type when it is not a regular file, else with *why
 * saying what is wrong with its content. buf is wiped on failure; on success, for a private
 * key, the caller wipes it.
 */
int note_key_line_read(const char *path, bool follow, char *buf, size_t size, mode_t *mode,
		       const char **why);
/* note_key_line_read of a private key: no symlink followed, no reason given. */
int note_key_file_read(const char *path, char *buf, size_t size);

#endif /* SLUICE_NOTE_H */
