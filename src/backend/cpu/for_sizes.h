/* Instantiates a template header once per element size, for kernels that
 * move elements as bits (copies, fills, where): includes CT_TEMPLATE (a
 * quoted path) with CT_T = uint8_t, uint16_t, uint32_t, uint64_t. */
#define CT_T uint8_t
#include CT_TEMPLATE
#undef CT_T
#define CT_T uint16_t
#include CT_TEMPLATE
#undef CT_T
#define CT_T uint32_t
#include CT_TEMPLATE
#undef CT_T
#define CT_T uint64_t
#include CT_TEMPLATE
#undef CT_T
