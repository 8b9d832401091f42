/* Kernels for the runtime's unit tests, in the calling convention of the
 * kernels the compiler generates: void name(void **args), args[i] the data of
 * the i-th buffer of the step (inputs first, then outputs). Sizes are fixed
 * per kernel, as they are in generated code. */
#include <math.h>
#include <stdint.h>

/* c[4] = a[4] + b[4] */
void test_add4(void **args) {
  const float *a = args[0], *b = args[1];
  float *c = args[2];
  for (int i = 0; i < 4; ++i)
    c[i] = a[i] + b[i];
}

/* out[4] = 2 * in[4] */
void test_scale2_4(void **args) {
  const float *in = args[0];
  float *out = args[1];
  for (int i = 0; i < 4; ++i)
    out[i] = 2 * in[i];
}

/* loss = (w x - y)^2, grad = dloss/dw = 2 (w x - y) x; all f32 scalars. */
void test_square_loss(void **args) {
  const float *w = args[0], *x = args[1], *y = args[2];
  float *loss = args[3], *grad = args[4];
  float r = *w * *x - *y;
  *loss = r * r;
  *grad = 2 * r * *x;
}

/* w -= lr * grad (w is read and written: a STATE parameter). */
void test_sgd(void **args) {
  const float *grad = args[0], *lr = args[1];
  float *w = args[2];
  *w -= *lr * *grad;
}

/* counter += 1 (an i64 STATE step counter). */
void test_increment(void **args) { *(int64_t *)args[0] += 1; }

/* Makes the loss NaN in the step where counter (before its increment) equals
 * trigger: the data went bad, the parameters did not. */
void test_nan_loss_at(void **args) {
  const int64_t *counter = args[0], *trigger = args[1];
  float *loss = args[2];
  if (*counter == *trigger)
    *loss = NAN;
}

/* Makes w NaN once counter (after its increment) reaches trigger: the
 * parameters went bad, so the next step's loss is NaN. */
void test_poison_at(void **args) {
  const int64_t *counter = args[0], *trigger = args[1];
  float *w = args[2];
  if (*counter >= *trigger)
    *w = NAN;
}
