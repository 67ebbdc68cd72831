// SPDX-License-Identifier: Apache-2.0
// For programs with a main() of their own that link SystemC (netagg-fpgad with the virtual
// platform): Debian's libsystemc.so defines main(), which calls sc_main(), and is linked with
// BIND_NOW, so the dynamic linker needs an sc_main even though the program's own main() is the
// one that runs. This one is never called by them; should a program without a main() of its own
// link it, it says so and fails.
#include <cstdio>

extern "C" int sc_main(int argc, char** argv);  // as SystemC declares it (sc_externs.h)

extern "C" int sc_main(int /*argc*/, char** argv) {
  std::fprintf(stderr, "%s: built without an entry point (sim/vp/no_sc_main.cpp)\n",
               argv && argv[0] ? argv[0] : "program");
  return 2;
}
