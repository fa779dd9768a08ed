#ifndef COURIER_CBROTLI_SHIM_H
#define COURIER_CBROTLI_SHIM_H
#include <brotli/decode.h>
#endif
