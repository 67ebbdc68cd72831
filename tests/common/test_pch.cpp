// SPDX-License-Identifier: Apache-2.0
// The program that carries the tests' precompiled header (tests/CMakeLists.txt). It is an
// executable so that it is compiled as the tests are (-fPIE); it does nothing.
int main() { return 0; }
