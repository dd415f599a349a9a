#pragma once
// TUG_HOST_DEVICE marks a function shared by host code and CUDA device code (one definition of a rule
// that both backends follow); it is empty where nvcc does not compile.
#ifdef __CUDACC__
#define TUG_HOST_DEVICE __host__ __device__
#else
#define TUG_HOST_DEVICE
#endif
