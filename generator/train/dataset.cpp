#include "generator/train/dataset.hpp"

#include "generator/compile/cache.hpp"
#include "runtime/error.hpp"
#include "runtime/io/npy.hpp"
#include "runtime/param_init.hpp"

#include <cmath>
#include <cstring>

namespace kiln {

namespace {

std::string_view bytes_of(const Tensor& t) {
  return {reinterpret_cast<const char*>(t.bytes()), t.nbytes()};
}

// Rows `samples` of t (rows along the first axis), zeros after them up to `batch` rows.
Tensor gather_rows(const Tensor& t, std::span<const int64_t> samples, int64_t batch) {
  Shape s = t.shape();
  const size_t row = t.nbytes() / size_t(s[0]);
  s[0] = batch;
  Tensor r(t.dtype(), s);
  for (size_t i = 0; i < samples.size(); ++i)
    std::memcpy(r.bytes() + i * row, t.bytes() + size_t(samples[i]) * row, row);
  return r;
}

} // namespace

std::string Dataset::digest() const {
  std::string all = content_hash(bytes_of(images)) + shape_str(images.shape());
  all += content_hash({reinterpret_cast<const char*>(labels.data()), labels.size() * 8});
  if (teacher.nbytes()) all += content_hash(bytes_of(teacher)) + shape_str(teacher.shape());
  return content_hash(all);
}

Dataset load_dataset(const std::string& images, const std::string& labels,
                     const std::string& teacher) {
  Dataset d;
  d.images_file = images, d.labels_file = labels, d.teacher_file = teacher;
  d.images = io::read_npy(images);
  const Shape& x = d.images.shape();
  if (!is_float(d.images.dtype()))
    throw Error(images, "dtype",
                cat("images must be floats (f16 or f32), not ", dtype_name(d.images.dtype())));
  if ((x.size() != 4 && x.size() != 3) || x[0] < 1)
    throw Error(images, "shape",
                cat("has shape ", shape_str(x),
                    "; images are [N, C, H, W] (1-D signals [N, C, L]), N >= 1"));
  for (int64_t i = 0; i < d.images.numel(); ++i)
    if (!std::isfinite(d.images.get(i)))
      throw Error(images, cat("element ", i),
                  cat("is ", d.images.get(i), "; images must be finite"));

  const Tensor y = io::read_npy(labels);
  if (y.dtype() != DType::i64 && y.dtype() != DType::i32)
    throw Error(
        labels, "dtype",
        cat("labels must be integer class indices (int64 or int32), not ", dtype_name(y.dtype())));
  if (y.shape() != Shape{x[0]})
    throw Error(labels, "shape",
                cat("has shape ", shape_str(y.shape()), "; ", images, " holds ", x[0],
                    " images, so the labels must be [", x[0], "]"));
  d.labels.resize(size_t(x[0]));
  for (int64_t i = 0; i < x[0]; ++i)
    d.labels[size_t(i)] = int64_t(y.get(i)); // int64 values beyond 2^53 are out of range anyway

  if (!teacher.empty()) {
    d.teacher = io::read_npy(teacher);
    const Shape& t = d.teacher.shape();
    if (!is_float(d.teacher.dtype()))
      throw Error(teacher, "dtype",
                  cat("a teacher's logits are floats, not ", dtype_name(d.teacher.dtype())));
    if (t.size() != 2 || t[0] != x[0])
      throw Error(teacher, "shape",
                  cat("has shape ", shape_str(t), "; ", images, " holds ", x[0],
                      " images, so the teacher's logits must be [", x[0], ", classes]"));
    for (int64_t i = 0; i < d.teacher.numel(); ++i)
      if (!std::isfinite(d.teacher.get(i)))
        throw Error(teacher, cat("element ", i),
                    cat("is ", d.teacher.get(i), "; logits must be finite"));
  }
  return d;
}

void hold_as_model_input(Dataset& d, bool signal) {
  const Shape x = d.images.shape();
  if (x.size() == 3 && !signal)
    throw Error(
        d.images_file, "shape",
        cat("has shape ", shape_str(x),
            "; the model takes images [N, C, H, W] ([N, C, L] only for a 1-D signal model)"));
  if (signal && x.size() == 4 && x[3] != 1)
    throw Error(d.images_file, "shape",
                cat("has shape ", shape_str(x),
                    "; the model is a 1-D signal model: it takes [N, C, L] (or [N, C, L, 1])"));
  if (x.size() == 3) d.images = d.images.reshaped({x[0], x[1], x[2], 1});
}

void check_dataset(const Dataset& d, int64_t channels, int64_t height, int64_t width,
                   int64_t classes, bool signal) {
  const Shape& x = d.images.shape();
  if (x[1] != channels || x[2] != height || x[3] != width)
    throw Error(d.images_file, "shape",
                signal ? cat("has signals [", x[1], ", ", x[2],
                             "] (channels, length); the model takes [", channels, ", ", height, "]")
                       : cat("has images [", x[1], ", ", x[2], ", ", x[3],
                             "] (channels, height, width); the model takes [", channels, ", ",
                             height, ", ", width, "]"));
  for (size_t i = 0; i < d.labels.size(); ++i)
    if (d.labels[i] < 0 || d.labels[i] >= classes)
      throw Error(d.labels_file, cat("[", i, "]"),
                  cat("label ", d.labels[i], " is outside the model's ", classes, " classes [0, ",
                      classes, ")"));
  if (d.teacher.nbytes() && d.teacher.shape()[1] != classes)
    throw Error(d.teacher_file, "shape",
                cat("has ", d.teacher.shape()[1], " logits per image; the model has ", classes,
                    " classes"));
}

std::vector<int64_t> epoch_order(int64_t n, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    order[size_t(i)] = i;
  uint64_t state = seed ^ (0x7261696e5f6b696cull + uint64_t(epoch) * 0x9e3779b97f4a7c15ull);
  splitmix64(state); // decorrelate neighbouring seeds
  for (int64_t i = n - 1; i > 0; --i) {
    // Unbiased draw in [0, i] by rejection.
    const uint64_t range = uint64_t(i) + 1, limit = UINT64_MAX - UINT64_MAX % range;
    uint64_t r;
    do
      r = splitmix64(state);
    while (r >= limit);
    std::swap(order[size_t(i)], order[size_t(r % range)]);
  }
  return order;
}

Tensor gather_images(const Dataset& d, std::span<const int64_t> samples, int64_t batch) {
  return gather_rows(d.images, samples, batch);
}

Tensor gather_labels(const Dataset& d, std::span<const int64_t> samples, int64_t batch) {
  Tensor t(DType::i64, {batch});
  auto v = t.as<int64_t>();
  for (size_t i = 0; i < samples.size(); ++i)
    v[i] = d.labels[size_t(samples[i])];
  return t;
}

Tensor gather_teacher(const Dataset& d, std::span<const int64_t> samples, int64_t batch) {
  return gather_rows(d.teacher, samples, batch);
}

int64_t count_correct(const Tensor& logits, std::span<const int64_t> labels, int64_t rows) {
  const int64_t k = logits.shape()[1];
  int64_t correct = 0;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t best = 0;
    for (int64_t c = 1; c < k; ++c)
      if (logits.get(r * k + c) > logits.get(r * k + best)) best = c;
    correct += best == labels[size_t(r)];
  }
  return correct;
}

} // namespace kiln
