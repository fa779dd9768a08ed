#ifndef COURIER_CZSTD_SHIM_H
#define COURIER_CZSTD_SHIM_H
#include <zstd.h>
#include <zstd_errors.h>
#endif
