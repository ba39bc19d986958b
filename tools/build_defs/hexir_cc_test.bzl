"""hexir_cc_test: the one way Hexir declares a C++ unit test."""

def hexir_cc_test(name, srcs = None, deps = [], catch2_main = True, **kwargs):
    """A C++ test: `srcs` defaults to [name + ".cc"] (the test beside the code it tests);
    Catch2's main is linked unless catch2_main = False (a test with its own main). Everything
    else (size, data, env, tags, copts, linkopts) is passed to cc_test unchanged."""
    native.cc_test(
        name = name,
        srcs = srcs if srcs != None else [name + ".cc"],
        deps = deps + (["@catch2_lib//:catch2_main"] if catch2_main else []),
        **kwargs
    )
