"""What the simulated Java processes print that is not ours to choose: the client libraries' logger classes and
the stack frames of their consume, send and send-back paths (the listeners' exceptions: ``exceptions.py``).
"""

from __future__ import annotations

# 5.x client logger classes (rendered with %logger{12})
C_CMCS = "org.apache.rocketmq.client.impl.consumer.ConsumeMessageConcurrentlyService"
C_CMOS = "org.apache.rocketmq.client.impl.consumer.ConsumeMessageOrderlyService"
C_POP = "org.apache.rocketmq.client.impl.consumer.ConsumeMessagePopConcurrentlyService"
C_DMPCI = "org.apache.rocketmq.client.impl.consumer.DefaultMQPushConsumerImpl"
C_PQ = "org.apache.rocketmq.client.impl.consumer.ProcessQueue"
C_OFFSET = "org.apache.rocketmq.client.consumer.store.RemoteBrokerOffsetStore"
C_FACTORY = "org.apache.rocketmq.client.impl.factory.MQClientInstance"
C_REBALANCE = "org.apache.rocketmq.client.impl.consumer.RebalanceImpl"
C_STATS = "org.apache.rocketmq.common.stats.StatsItemSet"
C_PRODUCER = "org.apache.rocketmq.client.impl.producer.DefaultMQProducerImpl"
C_NETTY = "org.apache.rocketmq.remoting.netty.NettyRemotingClient"
G_PUSH = "org.apache.rocketmq.client.java.impl.consumer.PushConsumerImpl"
G_SIMPLE = "org.apache.rocketmq.client.java.impl.consumer.SimpleConsumerImpl"
G_PRODUCER = "org.apache.rocketmq.client.java.impl.producer.ProducerImpl"

FRAMES_CMCS_4X = [
    "org.apache.rocketmq.client.impl.consumer.ConsumeMessageConcurrentlyService$ConsumeRequest.run("
    "ConsumeMessageConcurrentlyService.java:402)",
    "java.base/java.util.concurrent.Executors$RunnableAdapter.call(Executors.java:539)",
    "java.base/java.util.concurrent.FutureTask.run(FutureTask.java:264)",
    "java.base/java.util.concurrent.ThreadPoolExecutor.runWorker(ThreadPoolExecutor.java:1136)",
    "java.base/java.util.concurrent.ThreadPoolExecutor$Worker.run(ThreadPoolExecutor.java:635)",
    "java.base/java.lang.Thread.run(Thread.java:840)",
]
FRAMES_CMOS = [
    "org.apache.rocketmq.client.impl.consumer.ConsumeMessageOrderlyService$ConsumeRequest.run("
    "ConsumeMessageOrderlyService.java:482)",
    *FRAMES_CMCS_4X[1:],
]
FRAMES_SPRING = [
    "org.apache.rocketmq.spring.support.DefaultRocketMQListenerContainer.handleMessage("
    "DefaultRocketMQListenerContainer.java:399)",
    "org.apache.rocketmq.spring.support.DefaultRocketMQListenerContainer$DefaultMessageListenerConcurrently"
    ".consumeMessage(DefaultRocketMQListenerContainer.java:359)",
    *FRAMES_CMCS_4X,
]
FRAMES_GRPC = [
    "org.apache.rocketmq.client.java.impl.consumer.ConsumeTask.call(ConsumeTask.java:62)",
    "org.apache.rocketmq.client.java.impl.consumer.ConsumeTask.call(ConsumeTask.java:37)",
    "com.google.common.util.concurrent.TrustedListenableFutureTask$TrustedFutureInterruptibleTask"
    ".runInterruptibly(TrustedListenableFutureTask.java:131)",
    "java.base/java.util.concurrent.ThreadPoolExecutor.runWorker(ThreadPoolExecutor.java:1136)",
    "java.base/java.lang.Thread.run(Thread.java:840)",
]
FRAMES_SEND_BACK = [
    "org.apache.rocketmq.client.impl.MQClientAPIImpl.consumerSendMessageBack(MQClientAPIImpl.java:1231)",
    "org.apache.rocketmq.client.impl.consumer.DefaultMQPushConsumerImpl.sendMessageBack("
    "DefaultMQPushConsumerImpl.java:710)",
    "org.apache.rocketmq.client.impl.consumer.ConsumeMessageConcurrentlyService.sendMessageBack("
    "ConsumeMessageConcurrentlyService.java:290)",
    "org.apache.rocketmq.client.impl.consumer.ConsumeMessageConcurrentlyService.processConsumeResult("
    "ConsumeMessageConcurrentlyService.java:260)",
]
FRAMES_SEND = [
    "org.apache.rocketmq.remoting.netty.NettyRemotingClient.invokeSync(NettyRemotingClient.java:407)",
    "org.apache.rocketmq.client.impl.MQClientAPIImpl.sendMessageSync(MQClientAPIImpl.java:521)",
    "org.apache.rocketmq.client.impl.MQClientAPIImpl.sendMessage(MQClientAPIImpl.java:505)",
    "org.apache.rocketmq.client.impl.producer.DefaultMQProducerImpl.sendKernelImpl(DefaultMQProducerImpl.java:837)",
    "org.apache.rocketmq.client.impl.producer.DefaultMQProducerImpl.sendDefaultImpl(DefaultMQProducerImpl.java:575)",
    "org.apache.rocketmq.client.producer.DefaultMQProducer.send(DefaultMQProducer.java:333)",
]
