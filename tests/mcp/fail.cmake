# Fails a ctest test with a message: cmake -DMESSAGE=... -P fail.cmake
message(FATAL_ERROR "${MESSAGE}")
