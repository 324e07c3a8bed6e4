# The reference interpreter's tests (included from tests/CMakeLists.txt).
