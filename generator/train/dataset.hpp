// The datasets of training (kiln train): images, labels and a teacher's logits from .npy files
// (every one untrusted: checked against each other and against the model, each error naming its
// file), the seeded order of each epoch and the minibatches drawn from it.
#pragma once

#include "runtime/tensor.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace kiln {

struct Dataset {
  std::string images_file, labels_file, teacher_file;
  Tensor images;               // [N, C, H, W] (a signal's [N, C, L, 1]), f16, f32 or f64
  std::vector<int64_t> labels; // N class indices
  Tensor teacher;              // [N, K] floats (distillation), or empty
  int64_t size() const { return int64_t(labels.size()); }
  // A digest of the three files' contents (checkpoints refuse to resume on other data).
  std::string digest() const;
};

// Reads and checks a dataset: images 4-D floats (3-D: a 1-D signal model's [N, C, L]), labels [N]
// int64 or int32, the teacher's logits [N, K] floats, all with the same N >= 1. `teacher` may be
// empty.
Dataset load_dataset(const std::string& images, const std::string& labels,
                     const std::string& teacher = "");

// The images as the model holds its input: a signal model's [N, C, L] become [N, C, L, 1]
// (its [N, C, L, 1] are taken as they are; [N, C, H, W] with W != 1 is an error that says
// what it takes), and an image model's must be 4-D. Before check_dataset.
void hold_as_model_input(Dataset& d, bool signal);

// Checks a dataset against what the model takes: images [*, C, H, W] (a signal model's
// [*, C, L, 1], named [C, L] in errors) and classes in [0, classes) (the teacher's logits
// [*, classes]).
void check_dataset(const Dataset& d, int64_t channels, int64_t height, int64_t width,
                   int64_t classes, bool signal = false);

// The order of the samples in epoch `epoch` (from 0): a Fisher-Yates shuffle driven by
// splitmix64 from (seed, epoch) alone, the same on every platform and for a resumed run.
std::vector<int64_t> epoch_order(int64_t n, uint64_t seed, int64_t epoch);

// The images, labels and teacher logits of `samples`, padded with zeros to `batch` rows.
Tensor gather_images(const Dataset& d, std::span<const int64_t> samples, int64_t batch);
Tensor gather_labels(const Dataset& d, std::span<const int64_t> samples, int64_t batch);
Tensor gather_teacher(const Dataset& d, std::span<const int64_t> samples, int64_t batch);

// How many of the first `rows` rows of logits [B, K] have their largest value at the label's
// class (the first maximum on ties).
int64_t count_correct(const Tensor& logits, std::span<const int64_t> labels, int64_t rows);

} // namespace kiln
