"""The accuracy corpus: small models from real packages, random weights, seeded inputs, inference mode.

Every entry is a compile-lint factory (a zero-argument callable returning `(fn, args)` or `(fn, args, kwargs)`,
see src/compile_lint/confirm/run/targets.py) registered with its name and the import package whose source is linted.
Factories import their package lazily, so a child process that collects one model's truth imports only that one.
Nothing is downloaded: every model is built from its config with `torch.manual_seed` fixed weights.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))

from packages import PACKAGES  # beside this file, also when models.py is imported from elsewhere

Factory = Callable[[], tuple[Any, ...]]


@dataclass(frozen=True)
class Model:
    name: str
    package: str  # a key of PACKAGES
    factory: Factory


MODELS: dict[str, Model] = {}


def model(name: str, package: str) -> Callable[[Factory], Factory]:
    def register(factory: Factory) -> Factory:
        assert package in PACKAGES and name not in MODELS, name
        MODELS[name] = Model(name, package, factory)
        return factory

    return register


def evaluated(module: nn.Module) -> nn.Module:
    return module.eval()


def tokens(batch: int = 2, length: int = 32, vocab: int = 256) -> torch.Tensor:
    return torch.randint(0, vocab, (batch, length))


# --- x-transformers: one wrapper, many attention-layer configs -------------------------------------------


def x_decoder(**attn: Any) -> tuple[Any, ...]:
    from x_transformers import Decoder, TransformerWrapper

    torch.manual_seed(0)
    net = TransformerWrapper(num_tokens=256, max_seq_len=64, attn_layers=Decoder(dim=64, depth=2, heads=4, **attn))
    return evaluated(net), (tokens(),)


@model("xt_decoder_rotary", "x_transformers")
def xt_decoder_rotary() -> tuple[Any, ...]:
    return x_decoder(rotary_pos_emb=True)


@model("xt_decoder_alibi", "x_transformers")
def xt_decoder_alibi() -> tuple[Any, ...]:
    return x_decoder(alibi_pos_bias=True, alibi_num_heads=2)


@model("xt_decoder_relpos_glu_rmsnorm", "x_transformers")
def xt_decoder_relpos_glu_rmsnorm() -> tuple[Any, ...]:
    return x_decoder(rel_pos_bias=True, ff_glu=True, use_rmsnorm=True, attn_qk_norm=True)


@model("xt_decoder_dynamic_pos_bias_memkv", "x_transformers")
def xt_decoder_dynamic_pos_bias_memkv() -> tuple[Any, ...]:
    return x_decoder(dynamic_pos_bias=True, attn_num_mem_kv=4, residual_attn=True)


@model("xt_encoder_memory_tokens_mask", "x_transformers")
def xt_encoder_memory_tokens_mask() -> tuple[Any, ...]:
    from x_transformers import Encoder, TransformerWrapper

    torch.manual_seed(0)
    attn = Encoder(dim=64, depth=2, heads=4, attn_flash=False, sandwich_norm=True)
    net = TransformerWrapper(num_tokens=256, max_seq_len=64, num_memory_tokens=4, attn_layers=attn)
    mask = torch.ones(2, 32, dtype=torch.bool)
    mask[1, 20:] = False
    return evaluated(net), (tokens(),), {"mask": mask}


@model("xt_enc_dec_cross_attention", "x_transformers")
def xt_enc_dec_cross_attention() -> tuple[Any, ...]:
    from x_transformers import XTransformer

    torch.manual_seed(0)
    net = XTransformer(
        dim=64,
        enc_num_tokens=256,
        enc_depth=2,
        enc_heads=4,
        enc_max_seq_len=64,
        dec_num_tokens=256,
        dec_depth=2,
        dec_heads=4,
        dec_max_seq_len=64,
        tie_token_emb=True,
    )
    src_mask = torch.ones(2, 32, dtype=torch.bool)
    return evaluated(net), (tokens(), tokens(length=24)), {"mask": src_mask}


@model("xt_continuous", "x_transformers")
def xt_continuous() -> tuple[Any, ...]:
    from x_transformers import ContinuousTransformerWrapper, Decoder

    torch.manual_seed(0)
    net = ContinuousTransformerWrapper(
        dim_in=16, dim_out=8, max_seq_len=64, attn_layers=Decoder(dim=64, depth=2, heads=4, rotary_pos_emb=True)
    )
    return evaluated(net), (torch.randn(2, 32, 16),)


@model("xt_vit", "x_transformers")
def xt_vit() -> tuple[Any, ...]:
    from x_transformers import Encoder, ViTransformerWrapper

    torch.manual_seed(0)
    net = ViTransformerWrapper(
        image_size=32, patch_size=8, num_classes=10, attn_layers=Encoder(dim=64, depth=2, heads=4)
    )
    return evaluated(net), (torch.randn(2, 3, 32, 32),)


@model("xt_autoregressive_generate", "x_transformers")
def xt_autoregressive_generate() -> tuple[Any, ...]:
    from x_transformers import AutoregressiveWrapper, Decoder, TransformerWrapper

    torch.manual_seed(0)
    net = TransformerWrapper(num_tokens=256, max_seq_len=64, attn_layers=Decoder(dim=64, depth=2, heads=4))
    wrapper = AutoregressiveWrapper(evaluated(net))
    return wrapper.generate, (tokens(length=8), 6), {"cache_kv": True}


# --- vector-quantize-pytorch -----------------------------------------------------------------------------


@model("vq_vector_quantize_cosine", "vector_quantize_pytorch")
def vq_vector_quantize_cosine() -> tuple[Any, ...]:
    from vector_quantize_pytorch import VectorQuantize

    torch.manual_seed(0)
    vq = VectorQuantize(dim=32, codebook_size=64, use_cosine_sim=True, codebook_dim=16, decay=0.8)
    return evaluated(vq), (torch.randn(2, 16, 32),)


@model("vq_residual_vq_shared", "vector_quantize_pytorch")
def vq_residual_vq_shared() -> tuple[Any, ...]:
    from vector_quantize_pytorch import ResidualVQ

    torch.manual_seed(0)
    rvq = ResidualVQ(dim=32, num_quantizers=4, codebook_size=64, shared_codebook=True)
    return evaluated(rvq), (torch.randn(2, 16, 32),)


@model("vq_grouped_residual_vq", "vector_quantize_pytorch")
def vq_grouped_residual_vq() -> tuple[Any, ...]:
    from vector_quantize_pytorch import GroupedResidualVQ

    torch.manual_seed(0)
    rvq = GroupedResidualVQ(dim=32, groups=2, num_quantizers=2, codebook_size=64)
    return evaluated(rvq), (torch.randn(2, 16, 32),)


@model("vq_fsq", "vector_quantize_pytorch")
def vq_fsq() -> tuple[Any, ...]:
    from vector_quantize_pytorch import FSQ

    torch.manual_seed(0)
    return evaluated(FSQ(levels=[8, 5, 5, 5], dim=32)), (torch.randn(2, 16, 32),)


@model("vq_residual_fsq", "vector_quantize_pytorch")
def vq_residual_fsq() -> tuple[Any, ...]:
    from vector_quantize_pytorch import ResidualFSQ

    torch.manual_seed(0)
    return evaluated(ResidualFSQ(dim=32, levels=[8, 5, 5], num_quantizers=3)), (torch.randn(2, 16, 32),)


@model("vq_lfq_image", "vector_quantize_pytorch")
def vq_lfq_image() -> tuple[Any, ...]:
    from vector_quantize_pytorch import LFQ

    torch.manual_seed(0)
    lfq = LFQ(codebook_size=256, dim=16, entropy_loss_weight=0.1, diversity_gamma=1.0)
    return evaluated(lfq), (torch.randn(2, 16, 8, 8),)


@model("vq_latent_quantize", "vector_quantize_pytorch")
def vq_latent_quantize() -> tuple[Any, ...]:
    from vector_quantize_pytorch import LatentQuantize

    torch.manual_seed(0)
    lq = LatentQuantize(levels=[5, 5, 8], dim=16, commitment_loss_weight=0.1, quantization_loss_weight=0.1)
    return evaluated(lq), (torch.randn(2, 16, 8, 8),)


@model("vq_sim_vq", "vector_quantize_pytorch")
def vq_sim_vq() -> tuple[Any, ...]:
    from vector_quantize_pytorch import SimVQ

    torch.manual_seed(0)
    return evaluated(SimVQ(dim=32, codebook_size=64)), (torch.randn(2, 16, 32),)


# --- MONAI networks (2-D, small) -------------------------------------------------------------------------


def image(channels: int = 1, size: int = 32) -> torch.Tensor:
    return torch.randn(1, channels, size, size)


@model("monai_unet", "monai")
def monai_unet() -> tuple[Any, ...]:
    from monai.networks.nets.unet import UNet

    torch.manual_seed(0)
    net = UNet(spatial_dims=2, in_channels=1, out_channels=2, channels=(8, 16, 32), strides=(2, 2), num_res_units=2)
    return evaluated(net), (image(),)


@model("monai_basic_unet", "monai")
def monai_basic_unet() -> tuple[Any, ...]:
    from monai.networks.nets.basic_unet import BasicUNet

    torch.manual_seed(0)
    net = BasicUNet(spatial_dims=2, in_channels=1, out_channels=2, features=(8, 8, 16, 32, 64, 8))
    return evaluated(net), (image(),)


@model("monai_segresnet", "monai")
def monai_segresnet() -> tuple[Any, ...]:
    from monai.networks.nets.segresnet import SegResNet

    torch.manual_seed(0)
    net = SegResNet(
        spatial_dims=2, init_filters=8, in_channels=1, out_channels=2, blocks_down=(1, 2, 2), blocks_up=(1, 1)
    )
    return evaluated(net), (image(),)


@model("monai_attention_unet", "monai")
def monai_attention_unet() -> tuple[Any, ...]:
    from monai.networks.nets.attentionunet import AttentionUnet

    torch.manual_seed(0)
    net = AttentionUnet(spatial_dims=2, in_channels=1, out_channels=2, channels=(8, 16, 32), strides=(2, 2))
    return evaluated(net), (image(),)


@model("monai_unetr", "monai")
def monai_unetr() -> tuple[Any, ...]:
    from monai.networks.nets.unetr import UNETR

    torch.manual_seed(0)
    net = UNETR(
        in_channels=1, out_channels=2, img_size=(32, 32), spatial_dims=2, feature_size=8, hidden_size=64,
        mlp_dim=128, num_heads=4, proj_type="conv",
    )  # fmt: skip
    return evaluated(net), (image(),)


@model("monai_swin_unetr", "monai")
def monai_swin_unetr() -> tuple[Any, ...]:
    from monai.networks.nets.swin_unetr import SwinUNETR

    torch.manual_seed(0)
    net = SwinUNETR(in_channels=1, out_channels=2, spatial_dims=2, feature_size=12, depths=(1, 1, 1, 1))
    return evaluated(net), (image(size=64),)


@model("monai_dynunet_deep_supervision", "monai")
def monai_dynunet_deep_supervision() -> tuple[Any, ...]:
    from monai.networks.nets.dynunet import DynUNet

    torch.manual_seed(0)
    net = DynUNet(
        spatial_dims=2, in_channels=1, out_channels=2, kernel_size=[3, 3, 3, 3], strides=[1, 2, 2, 2],
        upsample_kernel_size=[2, 2, 2], filters=[8, 16, 32, 64], deep_supervision=True, deep_supr_num=1,
    )  # fmt: skip
    return evaluated(net), (image(),)


@model("monai_vit_classification", "monai")
def monai_vit_classification() -> tuple[Any, ...]:
    from monai.networks.nets.vit import ViT

    torch.manual_seed(0)
    net = ViT(
        in_channels=1, img_size=(32, 32), patch_size=(8, 8), hidden_size=64, mlp_dim=128, num_layers=2,
        num_heads=4, spatial_dims=2, classification=True, num_classes=3,
    )  # fmt: skip
    return evaluated(net), (image(),)


@model("monai_densenet121", "monai")
def monai_densenet121() -> tuple[Any, ...]:
    from monai.networks.nets.densenet import DenseNet

    torch.manual_seed(0)
    net = DenseNet(spatial_dims=2, in_channels=1, out_channels=3, init_features=8, growth_rate=8, block_config=(2, 2))
    return evaluated(net), (image(),)


# --- PyTorch Geometric: GNNs on a small random graph -----------------------------------------------------


def graph(nodes: int = 20, edges: int = 60, features: int = 16) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(nodes, features), torch.randint(0, nodes, (2, edges))


def basic_gnn(kind: str, **config: Any) -> tuple[Any, ...]:
    import torch_geometric.nn.models as pyg_models

    torch.manual_seed(0)
    net = getattr(pyg_models, kind)(in_channels=16, hidden_channels=32, num_layers=2, out_channels=4, **config)
    return evaluated(net), graph()


@model("pyg_gcn", "torch_geometric")
def pyg_gcn() -> tuple[Any, ...]:
    return basic_gnn("GCN")


@model("pyg_gat", "torch_geometric")
def pyg_gat() -> tuple[Any, ...]:
    return basic_gnn("GAT", heads=2, v2=True)


@model("pyg_graphsage", "torch_geometric")
def pyg_graphsage() -> tuple[Any, ...]:
    return basic_gnn("GraphSAGE", aggr="max")


@model("pyg_gin", "torch_geometric")
def pyg_gin() -> tuple[Any, ...]:
    return basic_gnn("GIN", jk="cat")


class GraphClassifier(nn.Module):
    """Two TransformerConv layers, attention-based global pooling over a batch of two graphs."""

    def __init__(self) -> None:
        from torch_geometric.nn import AttentionalAggregation, TransformerConv

        super().__init__()
        self.conv1 = TransformerConv(16, 16, heads=2)
        self.conv2 = TransformerConv(32, 32)
        self.pool = AttentionalAggregation(gate_nn=nn.Linear(32, 1))
        self.head = nn.Linear(32, 3)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor, batch: torch.Tensor) -> torch.Tensor:
        x = self.conv1(x, edge_index).relu()
        x = self.conv2(x, edge_index).relu()
        return self.head(self.pool(x, batch))  # type: ignore[no-any-return]


@model("pyg_transformer_conv_attention_pool", "torch_geometric")
def pyg_transformer_conv_attention_pool() -> tuple[Any, ...]:
    torch.manual_seed(0)
    x, edge_index = graph()
    batch = torch.cat([torch.zeros(10, dtype=torch.long), torch.ones(10, dtype=torch.long)])
    return evaluated(GraphClassifier()), (x, edge_index, batch)


@model("pyg_graph_unet_topk", "torch_geometric")
def pyg_graph_unet_topk() -> tuple[Any, ...]:
    from torch_geometric.nn.models import GraphUNet

    torch.manual_seed(0)
    net = GraphUNet(in_channels=16, hidden_channels=32, out_channels=4, depth=2)
    return evaluated(net), graph()


# --- kornia ----------------------------------------------------------------------------------------------


@model("kornia_augmentation_sequential", "kornia")
def kornia_augmentation_sequential() -> tuple[Any, ...]:
    import kornia.augmentation as K

    torch.manual_seed(0)
    aug = K.AugmentationSequential(
        K.ColorJiggle(0.1, 0.1, 0.1, 0.1, p=1.0),
        K.RandomAffine(degrees=15.0, translate=(0.1, 0.1), p=1.0),
        K.RandomHorizontalFlip(p=0.5),
    )
    return aug, (torch.rand(2, 3, 32, 32),)


@model("kornia_canny", "kornia")
def kornia_canny() -> tuple[Any, ...]:
    from kornia.filters import Canny

    torch.manual_seed(0)
    return Canny(), (torch.rand(2, 3, 32, 32),)


@model("kornia_sift_descriptor", "kornia")
def kornia_sift_descriptor() -> tuple[Any, ...]:
    from kornia.feature import SIFTDescriptor

    torch.manual_seed(0)
    return SIFTDescriptor(patch_size=32, num_ang_bins=8, num_spatial_bins=4), (torch.rand(4, 1, 32, 32),)


@model("kornia_warp_perspective", "kornia")
def kornia_warp_perspective() -> tuple[Any, ...]:
    from kornia.geometry.transform import get_perspective_transform, warp_perspective

    torch.manual_seed(0)
    src = torch.tensor([[[0.0, 0.0], [31.0, 0.0], [31.0, 31.0], [0.0, 31.0]]]).repeat(2, 1, 1)
    dst = src + torch.randn(2, 4, 2)

    @torch.compile  # what the user compiles: its region reaches the library
    def warp(img: torch.Tensor, src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
        return warp_perspective(img, get_perspective_transform(src, dst), (32, 32))

    return warp, (torch.rand(2, 3, 32, 32), src, dst)


@model("kornia_clahe_hsv", "kornia")
def kornia_clahe_hsv() -> tuple[Any, ...]:
    import kornia

    torch.manual_seed(0)

    @torch.compile  # what the user compiles: its region reaches the library
    def enhance(img: torch.Tensor) -> torch.Tensor:
        hsv = kornia.color.rgb_to_hsv(kornia.enhance.equalize_clahe(img, clip_limit=2.0, grid_size=(4, 4)))
        return kornia.morphology.dilation(hsv, torch.ones(3, 3))

    return enhance, (torch.rand(2, 3, 32, 32),)


@model("kornia_hardnet", "kornia")
def kornia_hardnet() -> tuple[Any, ...]:
    from kornia.feature import HardNet

    torch.manual_seed(0)
    return evaluated(HardNet(pretrained=False)), (torch.rand(4, 1, 32, 32),)


# --- torchdiffeq -----------------------------------------------------------------------------------------


class ODEFunc(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 32), nn.Tanh(), nn.Linear(32, 4))

    def forward(self, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.net(y)  # type: ignore[no-any-return]


def ode(method: str, **options: Any) -> tuple[Any, ...]:
    from torchdiffeq import odeint

    torch.manual_seed(0)
    func = evaluated(ODEFunc())

    @torch.compile  # what the user compiles: its region reaches the library
    def solve(y0: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return odeint(func, y0, t, method=method, **options)  # type: ignore[no-any-return]

    return solve, (torch.randn(3, 4), torch.linspace(0.0, 1.0, 5))


@model("ode_dopri5_adaptive", "torchdiffeq")
def ode_dopri5_adaptive() -> tuple[Any, ...]:
    return ode("dopri5", rtol=1e-3, atol=1e-4)


@model("ode_rk4_fixed_grid", "torchdiffeq")
def ode_rk4_fixed_grid() -> tuple[Any, ...]:
    return ode("rk4", options={"step_size": 0.1})


@model("ode_bosh3_adaptive", "torchdiffeq")
def ode_bosh3_adaptive() -> tuple[Any, ...]:
    return ode("bosh3", rtol=1e-3, atol=1e-4)


# --- tabular models --------------------------------------------------------------------------------------


@model("rtdl_ft_transformer", "rtdl_revisiting_models")
def rtdl_ft_transformer() -> tuple[Any, ...]:
    from rtdl_revisiting_models import FTTransformer

    torch.manual_seed(0)
    config = FTTransformer.get_default_kwargs(n_blocks=2)
    net = FTTransformer(n_cont_features=6, cat_cardinalities=[3, 5], d_out=1, **config)
    return evaluated(net), (torch.randn(4, 6), torch.tensor([[0, 1], [2, 4], [1, 0], [0, 3]]))


@model("rtdl_resnet", "rtdl_revisiting_models")
def rtdl_resnet() -> tuple[Any, ...]:
    from rtdl_revisiting_models import ResNet

    torch.manual_seed(0)
    net = ResNet(d_in=8, d_out=2, n_blocks=2, d_block=32, d_hidden=None, d_hidden_multiplier=2.0,
                 dropout1=0.1, dropout2=0.0)  # fmt: skip
    return evaluated(net), (torch.randn(4, 8),)


@model("tab_transformer", "tab_transformer_pytorch")
def tab_transformer() -> tuple[Any, ...]:
    from tab_transformer_pytorch import TabTransformer

    torch.manual_seed(0)
    net = TabTransformer(categories=(10, 5, 6), num_continuous=4, dim=32, dim_out=1, depth=2, heads=4,
                         mlp_hidden_mults=(4, 2), mlp_act=nn.ReLU())  # fmt: skip
    categ = torch.stack([torch.randint(0, n, (4,)) for n in (10, 5, 6)], dim=1)
    return evaluated(net), (categ, torch.randn(4, 4))


@model("tab_ft_transformer", "tab_transformer_pytorch")
def tab_ft_transformer() -> tuple[Any, ...]:
    from tab_transformer_pytorch import FTTransformer

    torch.manual_seed(0)
    net = FTTransformer(categories=(10, 5, 6), num_continuous=4, dim=32, dim_out=1, depth=2, heads=4)
    categ = torch.stack([torch.randint(0, n, (4,)) for n in (10, 5, 6)], dim=1)
    return evaluated(net), (categ, torch.randn(4, 4))


@model("tabnet", "pytorch_tabnet")
def tabnet() -> tuple[Any, ...]:
    from pytorch_tabnet.tab_network import TabNet

    torch.manual_seed(0)
    net = TabNet(input_dim=10, output_dim=2, n_d=8, n_a=8, n_steps=3, cat_idxs=[0], cat_dims=[5], cat_emb_dim=[2],
                 virtual_batch_size=4, group_attention_matrix=torch.eye(10))  # fmt: skip
    x = torch.randn(8, 10)
    x[:, 0] = torch.randint(0, 5, (8,)).float()
    return evaluated(net), (x,)


# --- neural operators ------------------------------------------------------------------------------------


@model("fno_2d", "neuralop")
def fno_2d() -> tuple[Any, ...]:
    from neuralop.models import FNO

    torch.manual_seed(0)
    net = FNO(n_modes=(8, 8), in_channels=1, out_channels=1, hidden_channels=16, n_layers=2)
    return evaluated(net), (torch.randn(2, 1, 32, 32),)


@model("tfno_2d_tucker", "neuralop")
def tfno_2d_tucker() -> tuple[Any, ...]:
    from neuralop.models import TFNO

    torch.manual_seed(0)
    net = TFNO(n_modes=(8, 8), in_channels=1, out_channels=1, hidden_channels=16, n_layers=2)
    return evaluated(net), (torch.randn(2, 1, 32, 32),)


# --- efficient-attention transformers --------------------------------------------------------------------


@model("perceiver_image_classifier", "perceiver_pytorch")
def perceiver_image_classifier() -> tuple[Any, ...]:
    from perceiver_pytorch import Perceiver

    torch.manual_seed(0)
    net = Perceiver(
        input_channels=3, input_axis=2, num_freq_bands=6, max_freq=10.0, depth=2, num_latents=16, latent_dim=32,
        cross_heads=1, latent_heads=4, cross_dim_head=16, latent_dim_head=16, num_classes=10,
    )  # fmt: skip
    return evaluated(net), (torch.randn(2, 16, 16, 3),)


@model("perceiver_io", "perceiver_pytorch")
def perceiver_io() -> tuple[Any, ...]:
    from perceiver_pytorch import PerceiverIO

    torch.manual_seed(0)
    net = PerceiverIO(dim=32, queries_dim=16, logits_dim=10, depth=2, num_latents=16, latent_dim=32)
    mask = torch.ones(2, 24, dtype=torch.bool)
    return evaluated(net), (torch.randn(2, 24, 32),), {"mask": mask, "queries": torch.randn(8, 16)}


@model("local_transformer", "local_attention")
def local_transformer() -> tuple[Any, ...]:
    from local_attention import LocalTransformer

    torch.manual_seed(0)
    net = LocalTransformer(num_tokens=256, dim=64, depth=2, max_seq_len=64, causal=True, local_attn_window_size=16)
    return evaluated(net), (tokens(length=64),)


@model("rotary_xpos_queries_keys", "rotary_embedding_torch")
def rotary_xpos_queries_keys() -> tuple[Any, ...]:
    from rotary_embedding_torch import RotaryEmbedding

    torch.manual_seed(0)
    rotary = RotaryEmbedding(dim=16, use_xpos=True)
    return rotary.rotate_queries_and_keys, (torch.randn(2, 4, 32, 32), torch.randn(2, 4, 32, 32))


@model("rotary_axial_pixels", "rotary_embedding_torch")
def rotary_axial_pixels() -> tuple[Any, ...]:
    from rotary_embedding_torch import RotaryEmbedding, apply_rotary_emb

    torch.manual_seed(0)
    rotary = RotaryEmbedding(dim=16, freqs_for="pixel", max_freq=64)

    @torch.compile  # what the user compiles: its region reaches the library
    def rotate(q: torch.Tensor) -> torch.Tensor:
        freqs = rotary.get_axial_freqs(8, 8)
        return apply_rotary_emb(freqs, q)  # type: ignore[no-any-return]

    return rotate, (torch.randn(2, 8, 8, 64),)


@model("nystromformer_masked", "nystrom_attention")
def nystromformer_masked() -> tuple[Any, ...]:
    from nystrom_attention import Nystromformer

    torch.manual_seed(0)
    net = Nystromformer(dim=64, dim_head=16, heads=4, depth=2, num_landmarks=16, pinv_iterations=4)
    mask = torch.ones(2, 100, dtype=torch.bool)
    mask[1, 80:] = False
    return evaluated(net), (torch.randn(2, 100, 64),), {"mask": mask}


@model("linear_attention_lm", "linear_attention_transformer")
def linear_attention_lm() -> tuple[Any, ...]:
    from linear_attention_transformer import LinearAttentionTransformerLM

    torch.manual_seed(0)
    net = LinearAttentionTransformerLM(
        num_tokens=256, dim=64, heads=4, depth=2, max_seq_len=64, causal=True, n_local_attn_heads=2,
        local_attn_window_size=16,
    )  # fmt: skip
    return evaluated(net), (tokens(length=64),)


# --- normalizing flows -----------------------------------------------------------------------------------


@model("zuko_nsf_log_prob", "zuko")
def zuko_nsf_log_prob() -> tuple[Any, ...]:
    import zuko

    torch.manual_seed(0)
    flow = evaluated(zuko.flows.NSF(features=3, context=2, transforms=2, hidden_features=[32, 32]))

    @torch.compile  # what the user compiles: its region reaches the library
    def log_prob(x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        return flow(c).log_prob(x)  # type: ignore[no-any-return]

    return log_prob, (torch.randn(8, 3), torch.randn(8, 2))


@model("zuko_maf_sample", "zuko")
def zuko_maf_sample() -> tuple[Any, ...]:
    import zuko

    torch.manual_seed(0)
    flow = evaluated(zuko.flows.MAF(features=3, context=2, transforms=2, hidden_features=[32, 32]))

    @torch.compile  # what the user compiles: its region reaches the library
    def sample(c: torch.Tensor) -> torch.Tensor:
        return flow(c).rsample()  # type: ignore[no-any-return]

    return sample, (torch.randn(8, 2),)


@model("nflows_maf_log_prob", "nflows")
def nflows_maf_log_prob() -> tuple[Any, ...]:
    from nflows.flows import MaskedAutoregressiveFlow

    torch.manual_seed(0)
    flow = evaluated(MaskedAutoregressiveFlow(features=4, hidden_features=32, num_layers=2, num_blocks_per_layer=2))
    return flow.log_prob, (torch.randn(8, 4),)


@model("nflows_realnvp_log_prob", "nflows")
def nflows_realnvp_log_prob() -> tuple[Any, ...]:
    from nflows.flows import SimpleRealNVP

    torch.manual_seed(0)
    flow = evaluated(SimpleRealNVP(features=4, hidden_features=32, num_layers=2, num_blocks_per_layer=2))
    return flow.log_prob, (torch.randn(8, 4),)


# --- transformers: every family of hf_families.json, with the input variants users run -----------------------


# Every family runs with a padding mask; the other variants run on every n-th family (of the sorted list), which
# keeps truth collection near an hour per torch version on 2 cores: families share most of their code (copied from
# one another) and every generate run goes through the same generation/utils.py.
TWO_LENGTHS_EVERY, OUTPUTS_EVERY, GENERATE_EVERY = 4, 5, 12


def hf_runs(model_type: str, head: str, index: int) -> None:
    """Register the runs of one family: padding mask (a ModelOutput), two calls with other lengths (automatic
    dynamic shapes on the second), optional outputs as a tuple, and generate with a kv cache for language models,
    with the padding mask and from the token ids alone (`model.generate(input_ids)`)."""
    import hf_families as hf

    def padded() -> tuple[Any, ...]:
        return hf.build(model_type, head), (), hf.text_inputs(head)

    def two_lengths() -> list[tuple[Any, ...]]:
        net = hf.build(model_type, head)
        return [(net, (), hf.text_inputs(head)), (net, (), hf.text_inputs(head, hf.SECOND_LENGTH))]

    def outputs() -> tuple[Any, ...]:
        kwargs = {"output_attentions": True, "output_hidden_states": True, "return_dict": False}
        return hf.build(model_type, head), (), {**hf.text_inputs(head), **kwargs}

    def generate() -> tuple[Any, ...]:
        net = hf.build(model_type, head)
        inputs = hf.text_inputs(head)
        inputs.pop("decoder_input_ids", None)
        kwargs = {"max_new_tokens": 3, "do_sample": False, "use_cache": True, "pad_token_id": 0}
        return net.generate, (), {**inputs, **kwargs}

    def generate_ids() -> tuple[Any, ...]:
        net = hf.build(model_type, head)
        kwargs = {"max_new_tokens": 3, "do_sample": False, "use_cache": True, "pad_token_id": 0}
        return net.generate, (hf.text_inputs(head)["input_ids"],), kwargs

    name = "hf_" + model_type.replace("-", "_")
    variants: dict[str, Factory] = {"padded": padded}
    if index % TWO_LENGTHS_EVERY == 0:
        variants["two_lengths"] = two_lengths
    if index % OUTPUTS_EVERY == 1:
        variants["outputs"] = outputs
    if index % GENERATE_EVERY == 2 and head in ("causal_lm", "seq2seq_lm"):
        variants["generate"] = generate
        variants["generate_ids"] = generate_ids
    for variant, factory in variants.items():
        model(f"{name}_{variant}", "transformers")(factory)


def hf_families() -> list[dict[str, str]]:
    import hf_families as hf

    families: list[dict[str, str]] = json.loads(hf.FAMILIES_FILE.read_text())
    return families


for position, family in enumerate(hf_families()):
    hf_runs(family["model_type"], family["head"], position)


# --- more lucidrains-style transformers and blocks -----------------------------------------------------------


@model("reformer_lm", "reformer_pytorch")
def reformer_lm() -> tuple[Any, ...]:
    from reformer_pytorch import ReformerLM

    torch.manual_seed(0)
    net = ReformerLM(num_tokens=256, dim=64, depth=2, max_seq_len=64, heads=4, bucket_size=8, causal=True)
    return evaluated(net), (tokens(length=64),)


@model("performer_lm_masked", "performer_pytorch")
def performer_lm_masked() -> tuple[Any, ...]:
    from performer_pytorch import PerformerLM

    torch.manual_seed(0)
    net = PerformerLM(num_tokens=256, max_seq_len=64, dim=64, depth=2, heads=4, nb_features=16, causal=False)
    mask = torch.ones(2, 32, dtype=torch.bool)
    mask[1, 24:] = False
    return evaluated(net), (tokens(),), {"mask": mask}


@model("performer_lm_causal_two_lengths", "performer_pytorch")
def performer_lm_causal_two_lengths() -> list[tuple[Any, ...]]:
    from performer_pytorch import PerformerLM

    torch.manual_seed(0)
    net = evaluated(PerformerLM(num_tokens=256, max_seq_len=64, dim=64, depth=2, heads=4, nb_features=16, causal=True))
    return [(net, (tokens(),)), (net, (tokens(length=48),))]


@model("mlp_mixer_image", "mlp_mixer_pytorch")
def mlp_mixer_image() -> tuple[Any, ...]:
    from mlp_mixer_pytorch import MLPMixer

    torch.manual_seed(0)
    net = MLPMixer(image_size=32, channels=3, patch_size=8, dim=64, depth=2, num_classes=10)
    return evaluated(net), (torch.randn(2, 3, 32, 32),)


@model("gmlp_lm", "g_mlp_pytorch")
def gmlp_lm() -> tuple[Any, ...]:
    from g_mlp_pytorch import gMLP

    torch.manual_seed(0)
    net = gMLP(num_tokens=256, dim=64, depth=2, seq_len=32, circulant_matrix=True)
    return evaluated(net), (tokens(),)


@model("gmlp_vision", "g_mlp_pytorch")
def gmlp_vision() -> tuple[Any, ...]:
    from g_mlp_pytorch import gMLPVision

    torch.manual_seed(0)
    net = gMLPVision(image_size=32, patch_size=8, num_classes=10, dim=64, depth=2)
    return evaluated(net), (torch.randn(2, 3, 32, 32),)


@model("axial_image_transformer", "axial_attention")
def axial_image_transformer() -> tuple[Any, ...]:
    from axial_attention import AxialImageTransformer

    torch.manual_seed(0)
    net = AxialImageTransformer(dim=16, depth=2, reversible=True)
    return evaluated(net), (torch.randn(1, 16, 8, 8),)


@model("axial_attention_positional", "axial_attention")
def axial_attention_positional() -> tuple[Any, ...]:
    from axial_attention import AxialAttention, AxialPositionalEmbedding

    torch.manual_seed(0)
    net = nn.Sequential(
        AxialPositionalEmbedding(dim=16, shape=(8, 8)),
        AxialAttention(dim=16, dim_index=1, heads=4, num_dimensions=2),
    )
    return evaluated(net), (torch.randn(1, 16, 8, 8),)


@model("conformer_masked", "conformer")
def conformer_masked() -> tuple[Any, ...]:
    from conformer import Conformer

    torch.manual_seed(0)
    net = Conformer(dim=64, depth=2, dim_head=16, heads=4, conv_kernel_size=7)
    return evaluated(net), (torch.randn(2, 32, 64),)


@model("conformer_two_lengths", "conformer")
def conformer_two_lengths() -> list[tuple[Any, ...]]:
    from conformer import Conformer

    torch.manual_seed(0)
    net = evaluated(Conformer(dim=64, depth=2, dim_head=16, heads=4, conv_kernel_size=7))
    return [(net, (torch.randn(2, 32, 64),)), (net, (torch.randn(2, 45, 64),))]


@model("egnn_network_masked", "egnn_pytorch")
def egnn_network_masked() -> tuple[Any, ...]:
    from egnn_pytorch import EGNN_Network

    torch.manual_seed(0)
    net = EGNN_Network(num_tokens=21, dim=32, depth=2, num_nearest_neighbors=4, coor_weights_clamp_value=2.0)
    mask = torch.ones(1, 16, dtype=torch.bool)
    mask[0, 12:] = False
    return evaluated(net), (torch.randint(0, 21, (1, 16)), torch.randn(1, 16, 3)), {"mask": mask}


@model("egnn_layer", "egnn_pytorch")
def egnn_layer() -> tuple[Any, ...]:
    from egnn_pytorch import EGNN

    torch.manual_seed(0)
    return evaluated(EGNN(dim=16)), (torch.randn(1, 16, 16), torch.randn(1, 16, 3))


@model("en_transformer_masked", "en_transformer")
def en_transformer_masked() -> tuple[Any, ...]:
    from en_transformer import EnTransformer

    torch.manual_seed(0)
    net = EnTransformer(dim=64, depth=2, dim_head=32, heads=2, neighbors=8)
    mask = torch.ones(1, 16, dtype=torch.bool)
    mask[0, 12:] = False
    return evaluated(net), (torch.randn(1, 16, 64), torch.randn(1, 16, 3)), {"mask": mask}


@model("moe_top2", "mixture_of_experts")
def moe_top2() -> tuple[Any, ...]:
    from mixture_of_experts import MoE

    torch.manual_seed(0)
    return evaluated(MoE(dim=64, num_experts=4)), (torch.randn(2, 32, 64),)


@model("st_moe_block", "st_moe_pytorch")
def st_moe_block() -> tuple[Any, ...]:
    from st_moe_pytorch import MoE, SparseMoEBlock

    torch.manual_seed(0)
    moe = MoE(dim=64, num_experts=4, gating_top_n=2, threshold_train=0.2, threshold_eval=0.2)
    return evaluated(SparseMoEBlock(moe, add_ff_before=True, add_ff_after=True)), (torch.randn(2, 32, 64),)


@model("palm_lm", "palm_pytorch")
def palm_lm() -> tuple[Any, ...]:
    from palm_pytorch import PaLM

    torch.manual_seed(0)
    return evaluated(PaLM(num_tokens=256, dim=64, depth=2, heads=4, dim_head=16)), (tokens(),)


@model("megabyte_lm", "MEGABYTE_pytorch")
def megabyte_lm() -> tuple[Any, ...]:
    from MEGABYTE_pytorch import MEGABYTE

    torch.manual_seed(0)
    net = MEGABYTE(num_tokens=256, dim=(64, 32), depth=(2, 1), max_seq_len=(16, 4), flash_attn=False)
    return evaluated(net), (torch.randint(0, 256, (1, 64)),)


@model("recurrent_memory_transformer", "recurrent_memory_transformer_pytorch")
def recurrent_memory_transformer() -> tuple[Any, ...]:
    from recurrent_memory_transformer_pytorch import RecurrentMemoryTransformer

    torch.manual_seed(0)
    net = RecurrentMemoryTransformer(
        num_tokens=256, num_memory_tokens=8, dim=64, depth=2, causal=True, dim_head=16, heads=4, seq_len=32
    )
    return evaluated(net), (tokens(),)


@model("block_recurrent_transformer", "block_recurrent_transformer_pytorch")
def block_recurrent_transformer() -> tuple[Any, ...]:
    from block_recurrent_transformer_pytorch import BlockRecurrentTransformer

    torch.manual_seed(0)
    net = BlockRecurrentTransformer(
        num_tokens=256, dim=64, depth=2, dim_head=16, heads=4, max_seq_len=64, block_width=16, num_state_vectors=16,
        recurrent_layers=(2,),
    )  # fmt: skip
    return evaluated(net), (tokens(length=64),)


@model("mambapy_two_lengths", "mambapy")
def mambapy_two_lengths() -> list[tuple[Any, ...]]:
    from mambapy.mamba import Mamba, MambaConfig

    torch.manual_seed(0)
    net = evaluated(Mamba(MambaConfig(d_model=32, n_layers=2)))
    return [(net, (torch.randn(2, 16, 32),)), (net, (torch.randn(2, 23, 32),))]


@model("hourglass_lm", "hourglass_transformer_pytorch")
def hourglass_lm() -> tuple[Any, ...]:
    from hourglass_transformer_pytorch import HourglassTransformerLM

    torch.manual_seed(0)
    net = HourglassTransformerLM(
        num_tokens=256, dim=64, max_seq_len=64, heads=4, dim_head=16, shorten_factor=2, depth=(2, 1, 2)
    )
    return evaluated(net), (tokens(),)


@model("routing_transformer_lm", "routing_transformer")
def routing_transformer_lm() -> tuple[Any, ...]:
    from routing_transformer import RoutingTransformerLM

    torch.manual_seed(0)
    net = RoutingTransformerLM(num_tokens=256, dim=64, heads=4, depth=2, max_seq_len=64, window_size=16, causal=True)
    return evaluated(net), (tokens(length=64),)


@model("linformer_encoder", "linformer")
def linformer_encoder() -> tuple[Any, ...]:
    from linformer import Linformer

    torch.manual_seed(0)
    return evaluated(Linformer(dim=64, seq_len=64, depth=2, heads=4, k=16)), (torch.randn(2, 64, 64),)


@model("product_key_memory", "product_key_memory")
def product_key_memory() -> tuple[Any, ...]:
    from product_key_memory import PKM

    torch.manual_seed(0)
    return evaluated(PKM(dim=64, heads=4, num_keys=16, topk=4)), (torch.randn(2, 32, 64),)


@model("axial_positional_embedding", "axial_positional_embedding")
def axial_positional_embedding() -> tuple[Any, ...]:
    from axial_positional_embedding import AxialPositionalEmbedding

    torch.manual_seed(0)
    return evaluated(AxialPositionalEmbedding(dim=64, axial_shape=(8, 8))), (torch.randn(2, 64, 64),)


# --- SDEs and controlled differential equations --------------------------------------------------------------


class SDE(nn.Module):
    noise_type = "diagonal"
    sde_type = "ito"

    def __init__(self) -> None:
        super().__init__()
        self.drift = nn.Linear(4, 4)

    def f(self, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.drift(y))

    def g(self, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return 0.1 * torch.sigmoid(y)


def sde(method: str) -> tuple[Any, ...]:
    import torchsde

    torch.manual_seed(0)
    equation = SDE()

    @torch.compile  # what the user compiles: its region reaches the library
    def solve(y0: torch.Tensor, ts: torch.Tensor) -> torch.Tensor:
        return torchsde.sdeint(equation, y0, ts, method=method, dt=0.1)  # type: ignore[no-any-return]

    return solve, (torch.randn(3, 4), torch.linspace(0, 0.5, 4))


@model("sde_euler", "torchsde")
def sde_euler() -> tuple[Any, ...]:
    return sde("euler")


@model("sde_milstein", "torchsde")
def sde_milstein() -> tuple[Any, ...]:
    return sde("milstein")


# --- probabilistic: Gaussian processes, Pyro transforms, normalizing flows ------------------------------------


@model("gpytorch_exact_gp_predict", "gpytorch")
def gpytorch_exact_gp_predict() -> tuple[Any, ...]:
    import gpytorch

    class GP(gpytorch.models.ExactGP):  # type: ignore[misc]
        def __init__(self, x: torch.Tensor, y: torch.Tensor, likelihood: Any) -> None:
            super().__init__(x, y, likelihood)
            self.mean = gpytorch.means.ConstantMean()
            self.covar = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())

        def forward(self, x: torch.Tensor) -> Any:
            return gpytorch.distributions.MultivariateNormal(self.mean(x), self.covar(x))

    torch.manual_seed(0)
    x = torch.linspace(0, 1, 20)
    likelihood = gpytorch.likelihoods.GaussianLikelihood()
    gp = GP(x, torch.sin(6 * x), likelihood).eval()
    likelihood.eval()

    @torch.compile  # what the user compiles: its region reaches the library
    def predict(test: torch.Tensor) -> torch.Tensor:
        return likelihood(gp(test)).mean  # type: ignore[no-any-return]

    return predict, (torch.linspace(0, 1, 7),)


@model("gpytorch_kernel_matrix", "gpytorch")
def gpytorch_kernel_matrix() -> tuple[Any, ...]:
    import gpytorch

    torch.manual_seed(0)
    kernel = gpytorch.kernels.ScaleKernel(gpytorch.kernels.MaternKernel(nu=2.5))

    @torch.compile  # what the user compiles: its region reaches the library
    def gram(x: torch.Tensor) -> torch.Tensor:
        return kernel(x).to_dense()  # type: ignore[no-any-return]

    return gram, (torch.randn(10, 3),)


@model("pyro_spline_coupling_log_prob", "pyro")
def pyro_spline_coupling_log_prob() -> tuple[Any, ...]:
    import pyro.distributions as dist
    import pyro.distributions.transforms as T

    torch.manual_seed(0)
    base = dist.Normal(torch.zeros(4), torch.ones(4))
    transform = T.spline_coupling(4, count_bins=8)
    flow = dist.TransformedDistribution(base, [transform])

    @torch.compile  # what the user compiles: its region reaches the library
    def log_prob(x: torch.Tensor) -> torch.Tensor:
        return flow.log_prob(x)  # type: ignore[no-any-return]

    return log_prob, (torch.randn(8, 4),)


@model("pyro_affine_autoregressive_sample", "pyro")
def pyro_affine_autoregressive_sample() -> tuple[Any, ...]:
    import pyro.distributions as dist
    import pyro.distributions.transforms as T

    torch.manual_seed(0)
    base = dist.Normal(torch.zeros(4), torch.ones(4))
    flow = dist.TransformedDistribution(base, [T.affine_autoregressive(4, hidden_dims=[16])])

    @torch.compile  # what the user compiles: its region reaches the library
    def sample(x: torch.Tensor) -> torch.Tensor:
        return flow.log_prob(x)  # type: ignore[no-any-return]

    return sample, (torch.randn(8, 4),)


@model("normflows_realnvp_log_prob", "normflows")
def normflows_realnvp_log_prob() -> tuple[Any, ...]:
    import normflows as nf

    torch.manual_seed(0)
    flows = []
    for index in range(2):
        net = nf.nets.MLP([2, 16, 2], init_zeros=True)
        mask = torch.tensor([index % 2, (index + 1) % 2], dtype=torch.float)
        flows += [nf.flows.MaskedAffineFlow(mask, t=net, s=None), nf.flows.ActNorm(2)]
    flow = nf.NormalizingFlow(nf.distributions.DiagGaussian(2), flows).eval()

    @torch.compile  # what the user compiles: its region reaches the library
    def log_prob(x: torch.Tensor) -> torch.Tensor:
        return flow.log_prob(x)  # type: ignore[no-any-return]

    return log_prob, (torch.randn(8, 2),)


@model("normflows_neural_spline_sample", "normflows")
def normflows_neural_spline_sample() -> tuple[Any, ...]:
    import normflows as nf

    torch.manual_seed(0)
    flows = [nf.flows.AutoregressiveRationalQuadraticSpline(2, 1, 16) for _ in range(2)]
    flow = nf.NormalizingFlow(nf.distributions.DiagGaussian(2), flows).eval()

    @torch.compile  # what the user compiles: its region reaches the library
    def forward_kld(x: torch.Tensor) -> torch.Tensor:
        return flow.forward_kld(x)  # type: ignore[no-any-return]

    return forward_kld, (torch.randn(8, 2),)


# --- transformers add-ons: LoRA adapters, sentence embeddings ------------------------------------------------


@model("peft_lora_llama", "peft")
def peft_lora_llama() -> tuple[Any, ...]:
    import hf_families as hf
    from peft import LoraConfig, get_peft_model

    net = get_peft_model(hf.build("llama", "causal_lm"), LoraConfig(r=4, target_modules=["q_proj", "v_proj"]))
    return evaluated(net), (), hf.text_inputs("causal_lm")


@model("peft_lora_bert_two_lengths", "peft")
def peft_lora_bert_two_lengths() -> list[tuple[Any, ...]]:
    import hf_families as hf
    from peft import LoraConfig, get_peft_model

    config = LoraConfig(r=4, target_modules=["query", "value"], lora_dropout=0.1)
    net = evaluated(get_peft_model(hf.build("bert", "masked_lm"), config))
    return [(net, (), hf.text_inputs("masked_lm")), (net, (), hf.text_inputs("masked_lm", hf.SECOND_LENGTH))]


@model("sentence_pooling_normalize", "sentence_transformers")
def sentence_pooling_normalize() -> tuple[Any, ...]:
    from sentence_transformers.models import Dense, Normalize, Pooling

    torch.manual_seed(0)
    net = nn.Sequential(Pooling(32, pooling_mode="mean"), Dense(32, 16), Normalize())
    mask = torch.ones(2, 12, dtype=torch.long)
    mask[1, 8:] = 0
    return evaluated(net), ({"token_embeddings": torch.randn(2, 12, 32), "attention_mask": mask},)
