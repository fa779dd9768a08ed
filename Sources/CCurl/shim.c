#define _GNU_SOURCE
#include <pthread.h>
#include "CCurl.h"
#include <string.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <sys/socket.h>

CURLcode courier_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode courier_easy_setopt_off(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode courier_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode courier_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode courier_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode courier_easy_setopt_data_callback(CURL *handle, CURLoption option, courier_data_callback callback) {
    return curl_easy_setopt(handle, option, callback);
}

CURLcode courier_easy_setopt_xferinfo_callback(CURL *handle, courier_xferinfo_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, callback);
}

CURLcode courier_easy_setopt_seek_callback(CURL *handle, courier_seek_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_SEEKFUNCTION, callback);
}

CURLcode courier_easy_setopt_trailer_callback(CURL *handle, courier_trailer_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_TRAILERFUNCTION, callback);
}

CURLcode courier_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

CURLcode courier_easy_getinfo_off(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}

CURLcode courier_easy_getinfo_socket(CURL *handle, CURLINFO info, curl_socket_t *value) {
    return curl_easy_getinfo(handle, info, value);
}

CURLcode courier_easy_getinfo_string(CURL *handle, CURLINFO info, const char **value) {
    return curl_easy_getinfo(handle, info, value);
}

CURLcode courier_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value) {
    return curl_easy_getinfo(handle, info, value);
}

CURLMcode courier_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}

void courier_set_thread_name(const char *name) {
    char truncated[16];
    strncpy(truncated, name, sizeof(truncated) - 1);
    truncated[sizeof(truncated) - 1] = 0;
    pthread_setname_np(pthread_self(), truncated);
}

CURLcode courier_easy_setopt_socket_callbacks(CURL *handle, courier_opensocket_callback open,
                                              courier_closesocket_callback close, void *clientp) {
    CURLcode code = curl_easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, open);
    if (code == CURLE_OK) code = curl_easy_setopt(handle, CURLOPT_OPENSOCKETDATA, clientp);
    if (code == CURLE_OK) code = curl_easy_setopt(handle, CURLOPT_CLOSESOCKETFUNCTION, close);
    if (code == CURLE_OK) code = curl_easy_setopt(handle, CURLOPT_CLOSESOCKETDATA, clientp);
    return code;
}

long courier_socket_unacknowledged_bytes(int socket) {
    int queued = 0;
    if (ioctl(socket, SIOCOUTQ, &queued) != 0) return -1;
    return queued;
}

/// The port of an IPv4 or IPv6 address, or -1.
static long courier_port_of(const struct sockaddr_storage *address) {
    if (address->ss_family == AF_INET) return ntohs(((const struct sockaddr_in *)address)->sin_port);
    if (address->ss_family == AF_INET6) return ntohs(((const struct sockaddr_in6 *)address)->sin6_port);
    return -1;
}

long courier_socket_local_port(int socket) {
    struct sockaddr_storage address;
    socklen_t length = sizeof(address);
    if (getsockname(socket, (struct sockaddr *)&address, &length) != 0) return -1;
    return courier_port_of(&address);
}

long courier_socket_peer_port(int socket) {
    struct sockaddr_storage address;
    socklen_t length = sizeof(address);
    if (getpeername(socket, (struct sockaddr *)&address, &length) != 0) return -1;
    return courier_port_of(&address);
}
