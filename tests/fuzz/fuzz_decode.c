/*
 * fuzz_decode.c: decodes arbitrary bytes as a response body under an
 * arbitrary Content-Encoding value (the input's first line, the body
 * after it), with a 64 KiB output cap, and checks the contract: a known
 * error code; on success a NUL-terminated buffer of at most cap bytes; on
 * error nothing handed out.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "crawler/net/decode.h"

#define CAP (64u * 1024u)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char encoding[128];
	const uint8_t *nl = memchr(data, '\n', size < sizeof encoding ? size : sizeof encoding);
	size_t elen = nl ? (size_t)(nl - data) : 0;
	memcpy(encoding, data, elen);
	encoding[elen] = '\0';
	const uint8_t *body = nl ? nl + 1 : data;
	size_t blen = size - (size_t)(body - data);
	struct decode_output out;
	enum decode_error rc = decode_body(nl ? encoding : NULL, body, blen, CAP, &out);
	switch (rc) {
	case DECODE_OK:
		if (!out.data || out.len > CAP || out.data[out.len] != '\0')
			abort();
		if (!nl && (out.len != blen || memcmp(out.data, body, blen) != 0))
			abort(); /* no encoding: a copy (the body is under the cap) */
		break;
	case DECODE_ERR_NOMEM:
	case DECODE_ERR_UNSUPPORTED:
	case DECODE_ERR_CORRUPT:
	case DECODE_ERR_INVALID:
		if (out.data || out.len)
			abort();
		break;
	default: abort();
	}
	free(out.data);
	return 0;
}
