// The ceiling for Courier's end-to-end figures: a minimal libcurl multi client in C with no
// Swift on top. One thread, one multi handle, `concurrency` easy handles reused for `requests`
// GETs of `url`, keep-alive, bodies counted (and inflated by curl when `accept_gzip` is set).
#ifndef RAW_CURL_H
#define RAW_CURL_H

#include <stdint.h>

// The module's other header, included here so that a build folder whose module cache predates
// it sees it (a header new in an umbrella folder does not invalidate the cache).
#include "bench_process.h"

typedef struct {
    int64_t completed;
    int64_t failed;
    int64_t bytes;
} raw_curl_result;

/// Runs the requests, asking for `accept_encoding` (NULL: no Accept-Encoding, nothing decoded;
/// libcurl decodes what it asked for); returns 0 on success, or a CURLMcode when the multi
/// interface failed.
int raw_curl_run(const char *url, int concurrency, int64_t requests, const char *accept_encoding,
                 raw_curl_result *result);



/// One-shot zlib inflate of a whole gzip buffer into `output` (the reference for Courier's
/// streaming decoder). Returns the inflated size, or -1 on error.
int64_t raw_inflate_gzip(const void *input, int64_t input_length, void *output, int64_t capacity);
/// gzip at level 9, as `gzip -9` writes it. Returns the compressed size, or -1 on error.
int64_t raw_compress_gzip(const void *input, int64_t input_length, void *output, int64_t capacity);
/// One-shot brotli and zstd (the libraries' own single calls), and their compressors for the
/// benchmark's payloads (brotli quality 11, zstd level 3). Each returns the bytes produced or -1.
int64_t raw_decompress_brotli(const void *input, int64_t input_length, void *output, int64_t capacity);
int64_t raw_compress_brotli(const void *input, int64_t input_length, void *output, int64_t capacity);
int64_t raw_decompress_zstd(const void *input, int64_t input_length, void *output, int64_t capacity);
int64_t raw_compress_zstd(const void *input, int64_t input_length, void *output, int64_t capacity);
#endif
