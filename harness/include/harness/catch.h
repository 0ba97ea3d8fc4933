// Catch2 2.13 (Debian) and 3.x (Ubuntu 24.04) behind one include; CMake says which was found.
#pragma once
#if RMSNORM_CATCH2_MAJOR >= 3
#include <catch2/catch_all.hpp>
#else
#include <catch2/catch.hpp>
#endif
