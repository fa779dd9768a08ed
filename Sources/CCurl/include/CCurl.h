// Typed wrappers over libcurl's variadic entry points (`curl_easy_setopt`,
// `curl_easy_getinfo`, `curl_multi_setopt`), which Swift cannot call directly.
#ifndef COURIER_CCURL_H
#define COURIER_CCURL_H

#include <curl/curl.h>
#include <stdint.h>
#include <time.h>

typedef size_t (*courier_data_callback)(char *buffer, size_t size, size_t count, void *userdata);
typedef int (*courier_xferinfo_callback)(void *userdata, curl_off_t dltotal, curl_off_t dlnow,
                                         curl_off_t ultotal, curl_off_t ulnow);
typedef int (*courier_seek_callback)(void *userdata, curl_off_t offset, int origin);
typedef int (*courier_trailer_callback)(struct curl_slist **list, void *userdata);

CURLcode courier_easy_setopt_long(CURL *handle, CURLoption option, long value);
CURLcode courier_easy_setopt_off(CURL *handle, CURLoption option, curl_off_t value);
CURLcode courier_easy_setopt_pointer(CURL *handle, CURLoption option, void *value);
CURLcode courier_easy_setopt_string(CURL *handle, CURLoption option, const char *value);
CURLcode courier_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value);
CURLcode courier_easy_setopt_data_callback(CURL *handle, CURLoption option, courier_data_callback callback);
CURLcode courier_easy_setopt_xferinfo_callback(CURL *handle, courier_xferinfo_callback callback);
CURLcode courier_easy_setopt_seek_callback(CURL *handle, courier_seek_callback callback);
/// Sets `CURLOPT_TRAILERFUNCTION` (the request trailers of a chunked upload).
CURLcode courier_easy_setopt_trailer_callback(CURL *handle, courier_trailer_callback callback);

CURLcode courier_easy_getinfo_long(CURL *handle, CURLINFO info, long *value);
CURLcode courier_easy_getinfo_off(CURL *handle, CURLINFO info, curl_off_t *value);
CURLcode courier_easy_getinfo_string(CURL *handle, CURLINFO info, const char **value);
CURLcode courier_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value);
CURLcode courier_easy_getinfo_socket(CURL *handle, CURLINFO info, curl_socket_t *value);

/// Names the calling thread (at most 15 characters are kept), so profiles can tell it apart.
void courier_set_thread_name(const char *name);

CURLMcode courier_multi_setopt_long(CURLM *multi, CURLMoption option, long value);

typedef curl_socket_t (*courier_opensocket_callback)(void *clientp, curlsocktype purpose,
                                                      struct curl_sockaddr *address);
typedef int (*courier_closesocket_callback)(void *clientp, curl_socket_t socket);

/// Sets the callbacks curl opens and closes its sockets with, and their `clientp`.
CURLcode courier_easy_setopt_socket_callbacks(CURL *handle, courier_opensocket_callback open,
                                              courier_closesocket_callback close, void *clientp);

/// Bytes written to `socket` that the peer has not yet acknowledged (Linux's `SIOCOUTQ`), or -1.
long courier_socket_unacknowledged_bytes(int socket);

/// The local port `socket` is bound to (IPv4 or IPv6), or -1 (not bound, or not an IP socket).
long courier_socket_local_port(int socket);
/// The remote port of a connected IPv4 or IPv6 socket, or -1.
long courier_socket_peer_port(int socket);

/// Nanoseconds on `CLOCK_MONOTONIC_COARSE`: a clock read from memory (no system call and no
/// time-stamp counter), advancing once a scheduler tick (1 to 4 ms). The curl loops stamp
/// activity with it; their idle checks need no finer grain.
static inline int64_t courier_coarse_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

/// Constants that are macros in curl.h and do not import as Swift values.
static const size_t courier_writefunc_pause = CURL_WRITEFUNC_PAUSE;
static const size_t courier_readfunc_abort = CURL_READFUNC_ABORT;
static const size_t courier_readfunc_pause = CURL_READFUNC_PAUSE;
static const int courier_seekfunc_ok = CURL_SEEKFUNC_OK;
static const int courier_seekfunc_fail = CURL_SEEKFUNC_FAIL;
static const int courier_trailerfunc_ok = CURL_TRAILERFUNC_OK;
static const int courier_trailerfunc_abort = CURL_TRAILERFUNC_ABORT;
static const long courier_pause_cont = CURLPAUSE_CONT;
static const int courier_error_size = CURL_ERROR_SIZE;
static const long courier_http_version_1_1 = CURL_HTTP_VERSION_1_1;
static const long courier_http_version_2tls = CURL_HTTP_VERSION_2TLS;
static const long courier_http_version_2_prior = CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE;
static const long courier_pipe_multiplex = CURLPIPE_MULTIPLEX;
static const long courier_global_default = CURL_GLOBAL_DEFAULT;
static const CURLversion courier_version_now = CURLVERSION_NOW;

/// Bits of `curl_version_info_data.features`.
static const int courier_feature_http2 = CURL_VERSION_HTTP2;
static const int courier_feature_ssl = CURL_VERSION_SSL;
static const int courier_feature_unix_sockets = CURL_VERSION_UNIX_SOCKETS;
static const int courier_feature_libz = CURL_VERSION_LIBZ;

#endif
