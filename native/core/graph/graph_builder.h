// graph_builder.h: what the graph builders (*_graph.cpp) write a forward
// graph with: tensor declarations looked up in the file, and ops.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "forward_graph.h"

namespace md {

class GraphBuilder {
 public:
  explicit GraphBuilder(const TensorLookup& lookup) : lookup_(lookup) {}

  // A matrix of `rows` rows of `cols` values, or a float32 vector (rows 0).
  TensorRef tensor(const std::string& name, uint64_t cols, uint64_t rows, bool required = true, uint64_t slices = 0) {
    TensorDecl d;
    d.name = name;
    d.cols = cols;
    d.rows = rows;
    d.required = required;
    d.slices = slices;
    if (const TensorType* type = lookup_(name)) {
      d.type = *type;
      d.present = true;
    }
    graph_.tensors.push_back(d);
    return TensorRef{d.present || required ? int(graph_.tensors.size() - 1) : -1};
  }

  // Whether the file has the tensor (a builder's choice between layouts).
  bool has(const std::string& name) const { return lookup_(name) != nullptr; }

  GraphOp& op(OpKind kind, std::string label, uint32_t layer = 0) {
    graph_.ops.emplace_back();
    GraphOp& o = graph_.ops.back();
    o.kind = kind;
    o.label = std::move(label);
    o.layer = layer;
    return o;
  }

  void rmsNorm(std::string label, uint32_t layer, Activation in, Activation out, TensorRef weight, uint32_t width,
               uint32_t rowsPerToken = 1) {
    GraphOp& o = op(OpKind::RmsNorm, std::move(label), layer);
    o.in = in;
    o.out = out;
    o.weight = weight;
    o.width = width;
    o.rowsPerToken = rowsPerToken;
  }

  void project(std::string label, uint32_t layer, Activation in, uint32_t cols, std::vector<Projection> projections,
               bool accumulate = false) {
    GraphOp& o = op(OpKind::Project, std::move(label), layer);
    o.in = in;
    o.width = cols;
    o.projections = std::move(projections);
    o.accumulate = accumulate;
  }

  // Hidden += in (rows of `width`).
  void addResidual(std::string label, uint32_t layer, Activation in, uint32_t width) {
    GraphOp& o = op(OpKind::AddResidual, std::move(label), layer);
    o.in = in;
    o.out = Activation::Hidden;
    o.width = width;
  }

  // The output norm and the LM head over the rows whose logits are wanted.
  void outputHead(TensorRef outputNorm, TensorRef output, uint32_t width) {
    GraphOp& norm = op(OpKind::OutputNorm, "output norm");
    norm.in = Activation::Hidden;
    norm.out = Activation::Normed;
    norm.weight = outputNorm;
    norm.width = width;
    GraphOp& head = op(OpKind::LmHead, "LM head");
    head.in = Activation::Normed;
    head.weight = output;
    head.width = width;
  }

  ForwardGraph& graph() { return graph_; }

 private:
  const TensorLookup& lookup_;
  ForwardGraph graph_;
};

}  // namespace md
