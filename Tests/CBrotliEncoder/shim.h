#ifndef COURIER_CBROTLIENCODER_SHIM_H
#define COURIER_CBROTLIENCODER_SHIM_H
#include <brotli/encode.h>
#endif
