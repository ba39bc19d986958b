/* A complete embedding of the Hexir runtime through its C API, using nothing but the
 * installed header hexir_runtime.h and the runtime library.
 *
 *   embed_example MODULE.vmfb [DEVICE_URI]
 *
 * Loads the module, calls its function "main" (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
 * with a = {1, 2, 3, 4} and b = {10, 20, 30, 40}, checks that the result is a + b, and shows
 * how an error is reported. Exit status 0 only if every check passed.
 */
#include <stdio.h>
#include <string.h>

#include "hexir_runtime.h"

/* Prints the failing call, its status and the runtime's message, then jumps to cleanup. */
#define TRY(call)                                                                 \
  do {                                                                            \
    hexir_status_t status_ = (call);                                              \
    if (status_ != HEXIR_OK) {                                                    \
      fprintf(stderr, "embed_example: %s failed: %s: %s\n", #call,                \
              hexir_status_name(status_), hexir_last_error());                    \
      goto cleanup;                                                               \
    }                                                                             \
  } while (0)

int main(int argc, char** argv) {
  const char* path;
  const char* uri;
  int ok = 0;
  size_t i;
  hexir_instance_t* instance = NULL;
  hexir_device_t* device = NULL;
  hexir_module_t* module = NULL;
  hexir_context_t* context = NULL;
  hexir_function_t* fn = NULL;
  hexir_function_t* missing = NULL;
  hexir_buffer_view_t* a_view = NULL;
  hexir_buffer_view_t* b_view = NULL;
  hexir_buffer_view_t* out_view = NULL;
  hexir_values_t* args = NULL;
  hexir_values_t* results = NULL;
  const float a[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  const float b[4] = {10.0f, 20.0f, 30.0f, 40.0f};
  float out[4] = {0, 0, 0, 0};
  const int64_t dims[1] = {4};
  hexir_status_t lookup_status;

  if (argc < 2) {
    fprintf(stderr, "usage: embed_example MODULE.vmfb [DEVICE_URI]\n");
    return 2;
  }
  path = argv[1];
  uri = argc > 2 ? argv[2] : "cpu";

  /* 1. Instance, device, context. */
  TRY(hexir_instance_create(&instance));
  TRY(hexir_device_create(instance, uri, &device));
  TRY(hexir_context_create(instance, device, &context));

  /* 2. Load the module (mapped and verified once) and link it into the context. */
  TRY(hexir_module_load_file(instance, path, &module));
  TRY(hexir_context_load_module(context, module));

  /* 3. Look up the function; its signature says what to pass. */
  TRY(hexir_context_lookup_function(context, "main", &fn));
  if (strcmp(hexir_function_signature(fn), "rr_r") != 0) {
    fprintf(stderr, "embed_example: unexpected signature '%s'\n", hexir_function_signature(fn));
    goto cleanup;
  }
  printf("module '%s': main : %s, abi.args = %s\n", hexir_module_name(module),
         hexir_function_signature(fn),
         hexir_function_attr(fn, "abi.args") ? hexir_function_attr(fn, "abi.args") : "?");

  /* 4. Inputs: buffer views copied from host memory. */
  TRY(hexir_buffer_view_from_host(device, HEXIR_ELEMENT_F32, dims, 1, a, sizeof(a), &a_view));
  TRY(hexir_buffer_view_from_host(device, HEXIR_ELEMENT_F32, dims, 1, b, sizeof(b), &b_view));
  TRY(hexir_values_create(&args));
  TRY(hexir_values_create(&results));
  TRY(hexir_values_push_buffer_view(args, a_view));
  TRY(hexir_values_push_buffer_view(args, b_view));

  /* 5. Call, then read the result view back to the host. */
  TRY(hexir_function_call(context, fn, args, results));
  if (hexir_values_size(results) != 1) {
    fprintf(stderr, "embed_example: %zu results, expected 1\n", hexir_values_size(results));
    goto cleanup;
  }
  TRY(hexir_values_get_buffer_view(results, 0, &out_view));
  if (hexir_buffer_view_element_type(out_view) != HEXIR_ELEMENT_F32 ||
      hexir_buffer_view_rank(out_view) != 1 || hexir_buffer_view_dim(out_view, 0) != 4) {
    fprintf(stderr, "embed_example: result is not a 4xf32 view\n");
    goto cleanup;
  }
  TRY(hexir_buffer_view_to_host(device, out_view, out, sizeof(out)));
  for (i = 0; i < 4; ++i) {
    if (out[i] != a[i] + b[i]) {
      fprintf(stderr, "embed_example: out[%zu] = %g, expected %g\n", i, out[i], a[i] + b[i]);
      goto cleanup;
    }
  }
  printf("main(a, b) = %g %g %g %g\n", out[0], out[1], out[2], out[3]);

  /* 6. Errors come back as codes with a message. */
  lookup_status = hexir_context_lookup_function(context, "no_such_function", &missing);
  if (lookup_status != HEXIR_NOT_FOUND || strstr(hexir_last_error(), "no_such_function") == NULL) {
    fprintf(stderr, "embed_example: expected not_found, got %s\n", hexir_status_name(lookup_status));
    goto cleanup;
  }
  printf("lookup of a missing function: %s: %s\n", hexir_status_name(lookup_status),
         hexir_last_error());
  ok = 1;

cleanup:
  /* 7. Every handle is released explicitly (releasing NULL is a no-op). */
  hexir_values_release(results);
  hexir_values_release(args);
  hexir_buffer_view_release(out_view);
  hexir_buffer_view_release(b_view);
  hexir_buffer_view_release(a_view);
  hexir_function_release(missing);
  hexir_function_release(fn);
  hexir_context_release(context);
  hexir_module_release(module);
  hexir_device_release(device);
  hexir_instance_release(instance);
  if (ok) printf("embed_example: ok\n");
  return ok ? 0 : 1;
}
