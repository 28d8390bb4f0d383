// GEOTRAIN_HOST_DEVICE marks small inline functions that CUDA kernels share with the CPU code
// (conversions, counter hashes, quantizer arithmetic), so both sides run the same source and get
// the same bits. Outside nvcc it expands to nothing.
#pragma once

#ifdef __CUDACC__
#define GEOTRAIN_HOST_DEVICE __host__ __device__
#else
#define GEOTRAIN_HOST_DEVICE
#endif
