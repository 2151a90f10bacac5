// MSCCL++'s earlier name for the port channel's device side: kernels written against it (`#include
// <mscclpp/proxy_channel_device.hpp>`, `ProxyChannelDeviceHandle`, `SimpleProxyChannelDeviceHandle`) compile
// unchanged. The proxy channel is the port channel: transfers posted to the host proxy.
#pragma once

#include "mscclpp/port_channel_device.hpp"

namespace mscclpp {

/// MSCCL++'s `ProxyChannelDeviceHandle`: the id-addressed port channel.
using ProxyChannelDeviceHandle = BasePortChannelDeviceHandle;
/// MSCCL++'s `SimpleProxyChannelDeviceHandle`: the port channel with its source and destination bound.
using SimpleProxyChannelDeviceHandle = PortChannelDeviceHandle;

}  // namespace mscclpp
