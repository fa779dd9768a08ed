#include "raw_curl.h"

#include <curl/curl.h>
#include <stdlib.h>

typedef struct {
    CURL *easy;
    int64_t bytes;
} slot;

static size_t count_bytes(char *data, size_t size, size_t count, void *user) {
    (void)data;
    ((slot *)user)->bytes += (int64_t)(size * count);
    return size * count;
}

static void configure(slot *s, const char *url, const char *accept_encoding) {
    curl_easy_setopt(s->easy, CURLOPT_URL, url);
    curl_easy_setopt(s->easy, CURLOPT_WRITEFUNCTION, count_bytes);
    curl_easy_setopt(s->easy, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(s->easy, CURLOPT_NOSIGNAL, 1L);
    if (accept_encoding) curl_easy_setopt(s->easy, CURLOPT_ACCEPT_ENCODING, accept_encoding);
}

int raw_curl_run(const char *url, int concurrency, int64_t requests, const char *accept_encoding, raw_curl_result *result) {
    result->completed = 0;
    result->failed = 0;
    result->bytes = 0;
    if (concurrency < 1) concurrency = 1;
    CURLM *multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)concurrency);
    slot *slots = calloc((size_t)concurrency, sizeof(slot));
    int64_t started = 0;
    for (int i = 0; i < concurrency && started < requests; i++, started++) {
        slots[i].easy = curl_easy_init();
        configure(&slots[i], url, accept_encoding);
        curl_easy_setopt(slots[i].easy, CURLOPT_PRIVATE, &slots[i]);
        curl_multi_add_handle(multi, slots[i].easy);
    }
    int running = 1;
    CURLMcode code = CURLM_OK;
    while (result->completed + result->failed < requests) {
        code = curl_multi_perform(multi, &running);
        if (code != CURLM_OK) break;
        CURLMsg *message;
        int queued;
        while ((message = curl_multi_info_read(multi, &queued))) {
            if (message->msg != CURLMSG_DONE) continue;
            slot *s;
            curl_easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, (char **)&s);
            if (message->data.result == CURLE_OK) result->completed++; else result->failed++;
            result->bytes += s->bytes;
            s->bytes = 0;
            curl_multi_remove_handle(multi, s->easy);
            if (started < requests) {
                started++;
                curl_multi_add_handle(multi, s->easy);  // the same handle: its connection is reused
            }
        }
        if (result->completed + result->failed >= requests) break;
        code = curl_multi_poll(multi, NULL, 0, 1000, NULL);
        if (code != CURLM_OK) break;
    }
    for (int i = 0; i < concurrency; i++) {
        if (slots[i].easy) {
            curl_multi_remove_handle(multi, slots[i].easy);
            curl_easy_cleanup(slots[i].easy);
        }
    }
    free(slots);
    curl_multi_cleanup(multi);
    return (int)code;
}

#include <zlib.h>

int64_t raw_inflate_gzip(const void *input, int64_t input_length, void *output, int64_t capacity) {
    z_stream stream = {0};
    if (inflateInit2(&stream, 15 + 16) != Z_OK) return -1;
    stream.next_in = (Bytef *)input;
    stream.avail_in = (uInt)input_length;
    stream.next_out = (Bytef *)output;
    stream.avail_out = (uInt)capacity;
    int status = inflate(&stream, Z_FINISH);
    int64_t produced = (int64_t)stream.total_out;
    inflateEnd(&stream);
    return status == Z_STREAM_END ? produced : -1;
}

/* gzip at level 9, as `gzip -9` writes it. */
int64_t raw_compress_gzip(const void *input, int64_t input_length, void *output, int64_t capacity) {
    z_stream stream = {0};
    if (deflateInit2(&stream, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return -1;
    stream.next_in = (Bytef *)input;
    stream.avail_in = (uInt)input_length;
    stream.next_out = (Bytef *)output;
    stream.avail_out = (uInt)capacity;
    int status = deflate(&stream, Z_FINISH);
    int64_t produced = (int64_t)stream.total_out;
    deflateEnd(&stream);
    return status == Z_STREAM_END ? produced : -1;
}

#include <brotli/decode.h>
#include <brotli/encode.h>
#include <zstd.h>

int64_t raw_decompress_brotli(const void *input, int64_t input_length, void *output, int64_t capacity) {
    size_t size = (size_t)capacity;
    BrotliDecoderResult result = BrotliDecoderDecompress((size_t)input_length, input, &size, output);
    return result == BROTLI_DECODER_RESULT_SUCCESS ? (int64_t)size : -1;
}

int64_t raw_compress_brotli(const void *input, int64_t input_length, void *output, int64_t capacity) {
    size_t size = (size_t)capacity;
    int ok = BrotliEncoderCompress(
        BROTLI_DEFAULT_QUALITY, BROTLI_DEFAULT_WINDOW, BROTLI_MODE_TEXT, (size_t)input_length, input, &size, output);
    return ok ? (int64_t)size : -1;
}

int64_t raw_decompress_zstd(const void *input, int64_t input_length, void *output, int64_t capacity) {
    size_t size = ZSTD_decompress(output, (size_t)capacity, input, (size_t)input_length);
    return ZSTD_isError(size) ? -1 : (int64_t)size;
}

int64_t raw_compress_zstd(const void *input, int64_t input_length, void *output, int64_t capacity) {
    size_t size = ZSTD_compress(output, (size_t)capacity, input, (size_t)input_length, 3);
    return ZSTD_isError(size) ? -1 : (int64_t)size;
}
