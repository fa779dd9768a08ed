#ifndef COURIER_CCHECKSUM_H
#define COURIER_CCHECKSUM_H

#include <stddef.h>
#include <stdint.h>

/// CRC-32C (Castagnoli) of `length` bytes, continuing from `crc` (0 to start).
/// Uses the CPU's CRC instruction when it has one (SSE 4.2 on x86_64), a table otherwise.
uint32_t courier_crc32c(uint32_t crc, const void *bytes, size_t length);

/// The same checksum computed from the table alone (for tests that compare both paths).
uint32_t courier_crc32c_portable(uint32_t crc, const void *bytes, size_t length);

#endif
